/* Large blocks under librmalloc.so: buffers of 1-24 MiB replaced at random (freed ones are kept
 * and reused, grown or trimmed), contents checked; realloc growing one buffer step by step (in
 * place or moved by mremap, never copied) keeps its contents; calloc of reused memory is zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fill(unsigned char *p, size_t n, unsigned char tag) { memset(p, tag, n); }
static int check(const unsigned char *p, size_t n, unsigned char tag) {
    for (size_t i = 0; i < n; i += 4093)
        if (p[i] != tag) return 0;
    return p[n - 1] == tag;
}

int main(void) {
    enum { N = 12 };
    unsigned char *buf[N] = {0};
    size_t len[N] = {0};
    unsigned x = 42;
    for (int i = 0; i < 400; i++) {
        x = x * 1103515245u + 12345u;
        int k = x % N;
        if (buf[k] && !check(buf[k], len[k], (unsigned char)k)) { fprintf(stderr, "corrupt %d\n", i); return 1; }
        free(buf[k]);
        len[k] = (1u << 20) + (x >> 8) % (23u << 20);
        buf[k] = malloc(len[k]);
        if (!buf[k]) return 2;
        fill(buf[k], len[k], (unsigned char)k);
        if (i % 10 == 0) {
            size_t n = (x >> 4) % (20u << 20) + (1u << 20);
            unsigned char *z = calloc(1, n);
            for (size_t j = 0; j < n; j += 4096)
                if (z[j]) { fprintf(stderr, "calloc not zero\n"); return 3; }
            free(z);
        }
    }
    for (int k = 0; k < N; k++) free(buf[k]);
    size_t n = 300 << 10;
    unsigned char *p = malloc(n);
    for (size_t j = 0; j < n; j++) p[j] = (unsigned char)(j * 7);
    while (n < (200u << 20)) {
        size_t m = n + n / 2;
        void *hold = malloc(1 << 20); /* something after it, sometimes */
        p = realloc(p, m);
        if (!p) return 4;
        for (size_t j = 0; j < n; j += 997)
            if (p[j] != (unsigned char)(j * 7)) { fprintf(stderr, "realloc lost data at %zu of %zu\n", j, n); return 5; }
        for (size_t j = n; j < m; j++) p[j] = (unsigned char)(j * 7);
        n = m;
        free(hold);
    }
    free(p);
    printf("large ok\n");
    return 0;
}
