/* Multi-threaded allocation benchmark for comparing allocators through LD_PRELOAD (glibc,
 * jemalloc, memhook's ptmalloc via libmpi_abi.so). Each thread:
 *  1. churns a working set of SLOTS blocks with random sizes (mostly small, some medium, rare
 *     large), checking one byte of each block before freeing it;
 *  2. builds a peak (many medium blocks), then frees 90% of it (irregular demand);
 *  3. passes blocks to the next thread, which frees them (cross-thread frees).
 * Prints wall time and peak RSS (ru_maxrss). Usage: alloc_bench [threads] [ops per thread] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define SLOTS 8192
#define PEAK 4096
#define HANDOFF 65536

static long ops = 2000000;
static int nthreads = 2;
static void **handoff;
static pthread_barrier_t bar;
static volatile long bad;

static uint64_t next(uint64_t *s) { *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17; return *s; }

static size_t rsize(uint64_t *s) {
    uint64_t r = next(s) % 1000;
    if (r == 0) return 256 * 1024 + next(s) % (768 * 1024);
    if (r < 50) return 4096 + next(s) % 60000;
    return 16 + next(s) % 496;
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(t + 1);
    unsigned char **slot = calloc(SLOTS, sizeof *slot);
    for (long i = 0; i < ops; i++) {
        size_t k = next(&s) % SLOTS;
        if (slot[k] && slot[k][0] != (unsigned char)k) bad++;
        free(slot[k]);
        size_t n = rsize(&s);
        slot[k] = malloc(n);
        slot[k][0] = (unsigned char)k;
        slot[k][n - 1] = 1;
    }
    for (int k = 0; k < SLOTS; k++) free(slot[k]);
    /* A peak of PEAK x 16-64 KiB blocks, 90% freed. */
    unsigned char **peak = malloc(PEAK * sizeof *peak);
    for (int k = 0; k < PEAK; k++) { size_t n = 16384 + next(&s) % 49152; peak[k] = malloc(n); memset(peak[k], 1, n); }
    for (int k = 0; k < PEAK; k++) if (k % 10) { free(peak[k]); peak[k] = NULL; }
    /* Cross-thread: fill my handoff row, then free the next thread's. */
    void **row = handoff + (size_t)t * HANDOFF;
    for (int k = 0; k < HANDOFF; k++) row[k] = malloc(16 + next(&s) % 240);
    pthread_barrier_wait(&bar);
    void **other = handoff + (size_t)((t + 1) % nthreads) * HANDOFF;
    for (int k = 0; k < HANDOFF; k++) free(other[k]);
    for (int k = 0; k < PEAK; k++) free(peak[k]);
    free(peak);
    free(slot);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) nthreads = atoi(argv[1]);
    if (argc > 2) ops = atol(argv[2]);
    handoff = malloc((size_t)nthreads * HANDOFF * sizeof *handoff);
    pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pthread_t th[64];
    for (int t = 0; t < nthreads; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < nthreads; t++) pthread_join(th[t], NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    /* Resident memory once everything is freed: what the allocator kept instead of returning. */
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) { if (fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0; fclose(f); }
    double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    printf("threads %d ops/thread %ld: wall %.3f s, cpu %.3f s (sys %.3f s), peak RSS %ld MiB, RSS after freeing all %ld MiB%s\n",
           nthreads, ops, (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9,
           user + sys, sys, ru.ru_maxrss / 1024, resident * 4 / 1024, bad ? " (CORRUPTION)" : "");
    return bad != 0;
}
