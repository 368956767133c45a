/* For the spy test: the main thread allocates 1000 objects of 100 bytes (class 112) and one of
 * 1 MiB; a second thread frees 400 of them (remote frees) and allocates 50 of 3000 bytes it
 * keeps; 600 + 50 small objects and the large one are live at the end. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *objs[1000];
void *kept[50]; /* not static: the compiler must keep these allocations */

static void *other(void *arg) {
    (void)arg;
    for (int i = 0; i < 400; i++) free(objs[i]);
    for (int i = 0; i < 50; i++) { kept[i] = malloc(3000); memset(kept[i], 3, 3000); }
    return NULL;
}

int main(void) {
    for (int i = 0; i < 1000; i++) { objs[i] = malloc(100); memset(objs[i], 1, 100); }
    void *big = malloc(1 << 20);
    memset(big, 2, 1 << 20);
    pthread_t t;
    pthread_create(&t, NULL, other, NULL);
    pthread_join(t, NULL);
    return 0;
}
