/* A C MPI program whose malloc is libmpi_abi.so's (memhook's ptmalloc provider): threads doing
 * random malloc/free/realloc/calloc/aligned allocations with content checks and cross-thread
 * frees, then ranks exchanging malloc'd buffers of every size class up to 4 MiB.
 * Prints " No Errors" on rank 0 when everything checked out. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTHREADS 4
#define SLOTS 256
#define OPS 100000

static int errors;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Blocks handed from each thread to the next one, which frees them (remote frees). */
static void *handoff[NTHREADS][SLOTS];

static void fail(const char *what, size_t n) {
    pthread_mutex_lock(&lock);
    if (errors++ < 10) fprintf(stderr, "malloc_stress: %s (size %zu)\n", what, n);
    pthread_mutex_unlock(&lock);
}

static uint64_t next(uint64_t *s) {
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

static size_t rsize(uint64_t *s) {
    uint64_t r = next(s) % 100;
    if (r == 0) return next(s) % (1 << 21);
    if (r < 10) return next(s) % (64 << 10);
    return next(s) % 512;
}

static int same(const unsigned char *p, size_t n, unsigned char v) {
    for (size_t i = 0; i < n; i++) if (p[i] != v) return 0;
    return 1;
}

static void *worker(void *arg) {
    int t = (int)(intptr_t)arg;
    uint64_t s = 88172645463325252ull + (uint64_t)t;
    unsigned char *p[SLOTS] = {0};
    size_t n[SLOTS] = {0};
    for (int op = 0; op < OPS; op++) {
        int i = (int)(next(&s) % SLOTS);
        unsigned char tag = (unsigned char)(i + t);
        if (p[i] && !same(p[i], n[i], tag)) fail("corrupted block", n[i]);
        switch (next(&s) % 4) {
        case 0:
            free(p[i]); p[i] = NULL; n[i] = 0;
            break;
        case 1: {
            size_t m = rsize(&s) + 1;
            unsigned char *q = realloc(p[i], m);
            if (!q) { fail("realloc failed", m); break; }
            if (!same(q, n[i] < m ? n[i] : m, tag)) fail("realloc lost contents", m);
            memset(q, tag, m); p[i] = q; n[i] = m;
            break;
        }
        case 2: {
            free(p[i]);
            size_t m = rsize(&s);
            unsigned char *q = calloc(1, m);
            if (!q && m) { fail("calloc failed", m); p[i] = NULL; n[i] = 0; break; }
            if (!same(q, m, 0)) fail("calloc not zeroed", m);
            memset(q, tag, m); p[i] = q; n[i] = m;
            break;
        }
        default: {
            free(p[i]);
            size_t align = (size_t)16 << (next(&s) % 9);
            size_t m = rsize(&s);
            void *q = NULL;
            if (posix_memalign(&q, align, m) != 0) { fail("posix_memalign failed", m); p[i] = NULL; n[i] = 0; break; }
            if ((uintptr_t)q % align) fail("misaligned", align);
            if (malloc_usable_size(q) < m) fail("usable size too small", m);
            memset(q, tag, m); p[i] = q; n[i] = m;
        }
        }
    }
    /* Hand every live block to the next thread, which frees it. */
    for (int i = 0; i < SLOTS; i++) {
        if (p[i] && !same(p[i], n[i], (unsigned char)(i + t))) fail("corrupted at end", n[i]);
        handoff[t][i] = p[i];
    }
    return NULL;
}

static void *reaper(void *arg) {
    int t = (int)(intptr_t)arg;
    for (int i = 0; i < SLOTS; i++) free(handoff[(t + 1) % NTHREADS][i]);
    return NULL;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    Dl_info info;
    if (!dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info) || !strstr(info.dli_fname, "libmpi"))
        fail("malloc is not libmpi's", 0);

    pthread_t th[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);
    for (int t = 0; t < NTHREADS; t++) pthread_create(&th[t], NULL, reaper, (void *)(intptr_t)t);
    for (int t = 0; t < NTHREADS; t++) pthread_join(th[t], NULL);

    /* Malloc'd buffers of growing size between rank pairs. */
    for (size_t len = 1; len <= (4u << 20); len *= 4) {
        unsigned char *buf = malloc(len);
        if (rank % 2 == 0 && rank + 1 < size) {
            memset(buf, (int)(len % 251), len);
            MPI_Send(buf, (int)len, MPI_BYTE, rank + 1, 0, MPI_COMM_WORLD);
        } else if (rank % 2 == 1) {
            MPI_Recv(buf, (int)len, MPI_BYTE, rank - 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (!same(buf, len, (unsigned char)(len % 251))) fail("received data wrong", len);
        }
        free(buf);
    }

    /* Rank 0 collects everyone's error count. */
    int total = errors;
    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            int e;
            MPI_Recv(&e, 1, MPI_INT, r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
        if (total == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    } else {
        MPI_Send(&total, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return total != 0;
}
