/*
 * pingpong_bench.c -- ping-pong latency benchmark, OSU osu_latency method.
 *
 * Ranks 0 and 1 bounce a message back and forth; for each size from 0 bytes
 * to 4 MiB (powers of two) rank 0 prints the one-way latency in
 * microseconds, elapsed / (2 * iterations), after some warm-up round trips:
 *   size <= 8 KiB:  1000 warm-up + 10000 timed iterations
 *   size >  8 KiB:   100 warm-up +  1000 timed iterations
 * (as osu_latency: its large-message counts apply above 8192 bytes).
 *
 * Output (rank 0), two columns:
 *   # size  latency(us)
 *   0            0.25
 *   ...
 *
 * Uses only MPI_Init, MPI_Comm_rank, MPI_Comm_size, MPI_Send, MPI_Recv,
 * MPI_Barrier, MPI_Wtime, MPI_Abort and MPI_Finalize, so the same source
 * builds with rmpi's mpicc and with Open MPI's / MPICH's, for side-by-side
 * runs:
 *   mpicc          -O2 -o bench.rmpi    pingpong_bench.c
 *   mpicc.openmpi  -O2 -o bench.openmpi pingpong_bench.c
 *   mpicc.mpich    -O2 -o bench.mpich   pingpong_bench.c
 *
 * Options (for quick runs; defaults are the OSU numbers):
 *   -m BYTES  largest message size (default 4194304; K/M suffixes accepted)
 *   -i N      timed iterations for small messages (default 10000)
 *   -w N      warm-up iterations for small messages (default 1000)
 *   -I N      timed iterations for large messages (default 1000)
 *   -W N      warm-up iterations for large messages (default 100)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int check_rc_ = (call);                                               \
        if (check_rc_ != MPI_SUCCESS) {                                       \
            fprintf(stderr, "pingpong_bench: %s failed with error %d (%s:%d)\n", \
                    #call, check_rc_, __FILE__, __LINE__);                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                     \
        }                                                                     \
    } while (0)

#define LARGE_MESSAGE_SIZE 8192
#define DEFAULT_MAX_SIZE (4 << 20)
#define ALIGNMENT 4096

static long parse_long(const char *opt, const char *s, long min, long max, int rank)
{
    char *end = NULL;
    long v = s ? strtol(s, &end, 10) : 0, mul = 1;
    if (end && end != s && *end != '\0' && end[1] == '\0') {
        /* optional K/M/G suffix, powers of 1024 */
        mul = (*end == 'k' || *end == 'K') ? 1L << 10
            : (*end == 'm' || *end == 'M') ? 1L << 20
            : (*end == 'g' || *end == 'G') ? 1L << 30 : 0;
        if (mul)
            end++;
    }
    if (mul && v <= max / mul)
        v *= mul;
    else
        v = -1;
    if (!s || end == s || *end != '\0' || v < min || v > max) {
        if (rank == 0)
            fprintf(stderr, "pingpong_bench: option %s needs a number in [%ld, %ld]\n",
                    opt, min, max);
        MPI_Finalize();
        exit(2);
    }
    return v;
}

/* Page-aligned buffer carved out of a larger malloc (C99 has no aligned
   allocation); *base is what to free. */
static char *aligned_buffer(size_t size, void **base)
{
    uintptr_t addr;
    *base = malloc(size + ALIGNMENT);
    if (!*base)
        return NULL;
    addr = (uintptr_t)*base;
    return (char *)*base + ((ALIGNMENT - addr % ALIGNMENT) % ALIGNMENT);
}

int main(int argc, char **argv)
{
    int rank, world, i;
    long size;
    long max_size = DEFAULT_MAX_SIZE;
    long iters_small = 10000, skip_small = 1000, iters_large = 1000, skip_large = 100;
    void *sbase, *rbase;
    char *sbuf, *rbuf;

    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));

    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-m") == 0)
            max_size = parse_long(a, v, 0, 1L << 30, rank);
        else if (strcmp(a, "-i") == 0)
            iters_small = parse_long(a, v, 1, 100000000L, rank);
        else if (strcmp(a, "-w") == 0)
            skip_small = parse_long(a, v, 0, 100000000L, rank);
        else if (strcmp(a, "-I") == 0)
            iters_large = parse_long(a, v, 1, 100000000L, rank);
        else if (strcmp(a, "-W") == 0)
            skip_large = parse_long(a, v, 0, 100000000L, rank);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: %s [-m max_bytes] [-i iters] [-w warmup] "
                                "[-I large_iters] [-W large_warmup]\n", argv[0]);
            MPI_Finalize();
            return 2;
        }
        i++;
    }

    if (world < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong_bench: needs at least 2 ranks (got %d)\n", world);
        MPI_Finalize();
        return 2;
    }

    sbuf = aligned_buffer((size_t)max_size + 1, &sbase);
    rbuf = aligned_buffer((size_t)max_size + 1, &rbase);
    if (!sbuf || !rbuf) {
        fprintf(stderr, "pingpong_bench: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, rank == 0 ? 'a' : 'b', (size_t)max_size + 1);
    memset(rbuf, 0, (size_t)max_size + 1);

    if (rank == 0) {
        printf("# size  latency(us)\n");
        fflush(stdout);
    }

    for (size = 0; size <= max_size; size = size ? size * 2 : 1) {
        long iters = size > LARGE_MESSAGE_SIZE ? iters_large : iters_small;
        long skip = size > LARGE_MESSAGE_SIZE ? skip_large : skip_small;
        long it;
        double t_start = 0.0, t_end;

        CHECK(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 0) {
            for (it = 0; it < iters + skip; it++) {
                if (it == skip)
                    t_start = MPI_Wtime();
                CHECK(MPI_Send(sbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD));
                CHECK(MPI_Recv(rbuf, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            }
            t_end = MPI_Wtime();
            printf("%-8ld %12.2f\n", size, (t_end - t_start) * 1e6 / (2.0 * (double)iters));
            fflush(stdout);
        } else if (rank == 1) {
            for (it = 0; it < iters + skip; it++) {
                CHECK(MPI_Recv(rbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
                CHECK(MPI_Send(sbuf, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD));
            }
        }
    }

    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    free(sbase);
    free(rbase);
    CHECK(MPI_Finalize());
    return 0;
}
