/*
 * side_by_side.c -- the C programs bench-compare builds with every MPI found on the machine
 * (rmpi's mpicc, Open MPI's, MPICH's) and runs interleaved, OSU's method throughout:
 *
 *   side_by_side lat       MAX DIV  ping-pong, one-way latency in us (round trip / 2)
 *   side_by_side bw        MAX DIV  window of 64 MPI_Isend, one reply; MB/s (10^6 bytes)
 *   side_by_side bibw      MAX DIV  windows both ways at once; MB/s counting both directions
 *   side_by_side allreduce MAX DIV  MPI_Allreduce of doubles (SUM), average us over ranks
 *                                   (from 8 bytes; any number of ranks)
 *
 * Sizes are powers of two up to MAX bytes (0 first for lat); OSU's iteration counts divided by
 * DIV (>= 1) for quick runs. Rank 0 prints one "size value" line per size. Receives of a window
 * share one buffer, as in OSU's own code.
 */
#define _POSIX_C_SOURCE 200112L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 64
#define LARGE 8192

static void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "side_by_side: %s failed (%d)\n", what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static long counts(long size, long small, long large, long div)
{
    long n = (size < LARGE ? small : large) / div;
    return n < 1 ? 1 : n;
}

static double lat(char *s, char *r, long size, long div, int rank)
{
    long skip = counts(size, 1000, 100, div), iters = counts(size, 10000, 1000, div);
    double t0 = 0;
    for (long i = 0; i < skip + iters; i++) {
        if (i == skip)
            t0 = MPI_Wtime();
        if (rank == 0) {
            check(MPI_Send(s, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD), "MPI_Send");
            check(MPI_Recv(r, (int)size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        } else if (rank == 1) {
            check(MPI_Recv(r, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            check(MPI_Send(s, (int)size, MPI_CHAR, 0, 1, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * iters);
}

static double bw(char *s, char *r, long size, long div, int rank, int both)
{
    long skip = counts(size, 10, 2, div), iters = counts(size, 100, 20, div);
    MPI_Request req[2 * WINDOW];
    static MPI_Status st[2 * WINDOW];
    char ack = 0;
    int peer = 1 - rank;
    double t0 = 0;
    for (long i = 0; i < skip + iters; i++) {
        if (i == skip)
            t0 = MPI_Wtime();
        if (rank > 1)
            continue;
        int n = 0;
        if (both || rank == 1)
            for (int w = 0; w < WINDOW; w++)
                check(MPI_Irecv(r, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[n++]), "MPI_Irecv");
        if (both || rank == 0)
            for (int w = 0; w < WINDOW; w++)
                check(MPI_Isend(s, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, &req[n++]), "MPI_Isend");
        check(MPI_Waitall(n, req, st), "MPI_Waitall");
        if (!both) {
            if (rank == 0)
                check(MPI_Recv(&ack, 1, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            else
                check(MPI_Send(&ack, 1, MPI_CHAR, 0, 2, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    double t = MPI_Wtime() - t0;
    return (double)size * WINDOW * iters * (both ? 2 : 1) / 1e6 / t;
}

static double allreduce(char *s, char *r, long size, long div, int nranks)
{
    long skip = counts(size, 200, 10, div), iters = counts(size, 1000, 100, div);
    double total = 0, avg = 0;
    int count = (int)(size / sizeof(double));
    for (long i = 0; i < skip + iters; i++) {
        double t0 = MPI_Wtime();
        check(MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
        if (i >= skip)
            total += MPI_Wtime() - t0;
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    }
    double mine = total * 1e6 / iters;
    check(MPI_Allreduce(&mine, &avg, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    return avg / nranks;
}

int main(int argc, char **argv)
{
    int rank, nranks;
    check(MPI_Init(&argc, &argv), "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    const char *mode = argc > 1 ? argv[1] : "";
    long max = argc > 2 ? atol(argv[2]) : 0, div = argc > 3 ? atol(argv[3]) : 0;
    int known = !strcmp(mode, "lat") || !strcmp(mode, "bw") || !strcmp(mode, "bibw") ||
                !strcmp(mode, "allreduce");
    if (!known || max < 1 || max > (1L << 30) || div < 1 || (strcmp(mode, "allreduce") && nranks < 2)) {
        if (rank == 0)
            fprintf(stderr, "usage: side_by_side lat|bw|bibw|allreduce MAX_BYTES ITERATION_DIVISOR "
                            "(2 ranks or more but for allreduce)\n");
        MPI_Finalize();
        return 2;
    }
    void *s = NULL, *r = NULL;
    if (posix_memalign(&s, 4096, (size_t)max) || posix_memalign(&r, 4096, (size_t)max)) {
        fprintf(stderr, "side_by_side: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(s, 'a', (size_t)max);
    memset(r, 'b', (size_t)max);
    long start = !strcmp(mode, "lat") ? 0 : !strcmp(mode, "allreduce") ? 8 : 1;
    for (long size = start; size <= max; size = size ? size * 2 : 1) {
        double v = 0;
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        if (!strcmp(mode, "lat"))
            v = lat(s, r, size, div, rank);
        else if (!strcmp(mode, "bw") || !strcmp(mode, "bibw"))
            v = bw(s, r, size, div, rank, !strcmp(mode, "bibw"));
        else
            v = allreduce(s, r, size, div, nranks);
        if (rank == 0) {
            printf("%ld %.4f\n", size, v);
            fflush(stdout);
        }
    }
    free(s);
    free(r);
    check(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
