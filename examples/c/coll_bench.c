/*
 * coll_bench.c -- collective timing: MPI_Allreduce (MPI_DOUBLE, MPI_SUM) and MPI_Bcast
 * (MPI_BYTE, root 0) of 8 bytes and 1 MiB.
 *
 * For each case: a barrier, W warm-up calls, then N timed calls; every rank measures its own
 * average time per call and rank 0 prints the largest of them (the slowest rank bounds a
 * collective), in microseconds. The reduction result is checked once.
 *
 * Uses only standard MPI calls, so it builds with rmpi's mpicc and with Open MPI's / MPICH's:
 *   mpicc         -O2 -o coll_bench.rmpi    coll_bench.c
 *   mpicc.openmpi -O2 -o coll_bench.openmpi coll_bench.c
 *
 * Options: -n N timed iterations for 1 MiB (default 200; 8 bytes use 20x), -w N warm-up (20).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

static double timed(int kind, void *a, void *b, int bytes, int iters, int warm) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = 0;
    for (int i = 0; i < warm + iters; i++) {
        if (i == warm) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        if (kind == 0)
            MPI_Allreduce(a, b, bytes / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Bcast(a, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    double mine = (MPI_Wtime() - t0) / iters * 1e6, worst = 0;
    MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return worst;
}

int main(int argc, char **argv) {
    int iters = 200, warm = 20, opt;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "n:w:")) != -1) {
        if (opt == 'n')
            iters = atoi(optarg);
        else if (opt == 'w')
            warm = atoi(optarg);
    }
    const int big = 1 << 20;
    double *a = malloc(big), *b = malloc(big);
    if (!a || !b)
        MPI_Abort(MPI_COMM_WORLD, 1);
    for (int i = 0; i < big / 8; i++)
        a[i] = rank + i;
    MPI_Allreduce(a, b, big / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < big / 8; i++) {
        if (b[i] != (double)size * (size - 1) / 2 + (double)size * i) {
            fprintf(stderr, "rank %d: wrong allreduce result at %d\n", rank, i);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int sizes[2] = {8, big};
    if (rank == 0)
        printf("# %d ranks; max over ranks of the mean time per call\n# op         bytes   time(us)\n", size);
    for (int kind = 0; kind < 2; kind++) {
        for (int s = 0; s < 2; s++) {
            int n = sizes[s] == big ? iters : iters * 20;
            double t = timed(kind, a, b, sizes[s], n, warm);
            if (rank == 0)
                printf("%-10s %8d %10.2f\n", kind == 0 ? "Allreduce" : "Bcast", sizes[s], t);
        }
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
