/* Passive-target RMA latency and bandwidth: rank 0 reads and writes rank 1's window under
 * MPI_Win_lock_all while rank 1 waits in MPI_Barrier (it makes progress, so the message path
 * is measured at its best). Per size (8 B, 4 KiB, 1 MiB) and window (Win_allocate: load/store
 * with osc_direct=auto; Win_create: CMA): latency = one Put (Get) + MPI_Win_flush, bandwidth =
 * 32 Puts (Gets) then one flush. Compare `--mca osc_direct off` with the default.
 *   mpicc -O2 benchmarks/c/rma_passive.c -o rma_passive
 *   mpirun -np 2 ./rma_passive [--mca osc_direct off] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXLEN (1 << 20)
#define WINDOW 32

static double lat(MPI_Win win, char *buf, int len, int get, int iters) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        if (get)
            MPI_Get(buf, len, MPI_BYTE, 1, 0, len, MPI_BYTE, win);
        else
            MPI_Put(buf, len, MPI_BYTE, 1, 0, len, MPI_BYTE, win);
        MPI_Win_flush(1, win);
    }
    return (MPI_Wtime() - t0) / iters;
}

static double bw(MPI_Win win, char *buf, int len, int get, int iters) {
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        for (int w = 0; w < WINDOW; w++) {
            if (get)
                MPI_Get(buf + (size_t)w * len, len, MPI_BYTE, 1, 0, len, MPI_BYTE, win);
            else
                MPI_Put(buf + (size_t)w * len, len, MPI_BYTE, 1, 0, len, MPI_BYTE, win);
        }
        MPI_Win_flush(1, win);
    }
    double t = MPI_Wtime() - t0;
    return (double)len * WINDOW * iters / t / 1e6;
}

static void measure(const char *name, MPI_Win win, int rank) {
    static char *buf;
    if (!buf) buf = calloc((size_t)MAXLEN * WINDOW, 1);
    int lens[3] = {8, 4096, MAXLEN};
    if (rank == 0) {
        MPI_Win_lock_all(0, win);
        for (int l = 0; l < 3; l++) {
            int len = lens[l];
            int iters = len >= MAXLEN ? 50 : 2000, biters = len >= MAXLEN ? 4 : 200;
            lat(win, buf, len, 0, iters / 10); /* warm up */
            double lp = lat(win, buf, len, 0, iters), lg = lat(win, buf, len, 1, iters);
            double bp = bw(win, buf, len, 0, biters), bg = bw(win, buf, len, 1, biters);
            printf("%-9s %8d B  put %9.2f us  get %9.2f us  put %9.1f MB/s  get %9.1f MB/s\n",
                   name, len, lp * 1e6, lg * 1e6, bp, bg);
            fflush(stdout);
        }
        MPI_Win_unlock_all(win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0) printf("rma_passive needs 2 ranks\n");
        MPI_Finalize();
        return 0;
    }
    char *mem;
    MPI_Win win;
    MPI_Win_allocate(MAXLEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    measure("allocate", win, rank);
    MPI_Win_free(&win);

    char *user = calloc(MAXLEN, 1);
    MPI_Win_create(user, MAXLEN, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    measure("create", win, rank);
    MPI_Win_free(&win);
    free(user);
    MPI_Finalize();
    return 0;
}
