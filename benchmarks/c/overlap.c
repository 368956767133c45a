/* Communication/computation overlap of point-to-point messages, OSU 5.3's method for its
 * non-blocking collectives applied to MPI_Isend/MPI_Irecv (OSU has no point-to-point overlap
 * test). Per size, ranks 0 and 1 move SIZE bytes, first with no computation (the pure
 * communication time), then with that much computation between posting and waiting, which
 * calls no MPI (so only an asynchronous progress thread, or what a send does at posting, moves
 * data meanwhile). Overlap = 100 * (1 - (overall - compute) / pure), as OSU, on the rank that
 * computes, where compute is the computation's measured wall time. The computation is a fixed
 * amount of work (as long as the pure time when it runs alone), not a wall-clock loop as OSU's,
 * so CPU time a progress thread takes from it shows in compute and in the overall time. Modes:
 *   both  each rank sends to and receives from the other, and both compute (default);
 *   recv  rank 0 sends and waits, rank 1 receives and computes;
 *   send  rank 0 sends and computes, rank 1 receives and waits.
 * Every received byte is checked. Ranks above 1 only take part in the barriers.
 *   mpicc -O2 benchmarks/c/overlap.c -o overlap
 *   mpirun -np 2 [--mca mpi_async_progress 1] ./overlap [-n ITERATIONS] [-m] [-c FACTOR]
 *          [-r MBPS] [both|recv|send] [SIZES...]
 * -m asks MPI_Init_thread for MPI_THREAD_MULTIPLE (what the progress thread runs under); -c
 * computes FACTOR times the pure communication time (1, OSU's choice, by default; a transfer
 * can only hide completely behind a computation at least as long as it takes when overlapped);
 * -r instead computes SIZE / MBPS microseconds, the same for every MPI and setting, so their
 * overall times compare directly. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A fixed amount of work, calling no MPI: `steps` steps. Fixed work, not a wall-clock loop
 * (OSU's), so that CPU time a progress thread takes from it shows in the overall time. */
static volatile double sink;
static void work(long steps) {
    double x = sink;
    for (long i = 0; i < steps; i++)
        x = x * 1.0000001 + 1e-9;
    sink = x;
}

/* Steps per second of `work`, the best of a few tries. */
static double calibrate(void) {
    double best = 0;
    for (int k = 0; k < 5; k++) {
        long steps = 2000000;
        double t0 = now();
        work(steps);
        double rate = steps / (now() - t0);
        if (rate > best)
            best = rate;
    }
    return best;
}
static double steps_per_sec;

static unsigned char byte_of(int rank, int it, size_t i) {
    return (unsigned char)(rank * 101 + it * 7 + i * 13 + 1);
}

enum mode { BOTH, RECV, SEND };

/* One transfer with `secs` of computation on the computing rank(s); returns this rank's wall
 * time from posting to completion. */
static double transfer(int rank, enum mode mode, size_t size, unsigned char *sbuf,
                       unsigned char *rbuf, int it, double secs, int *errors, double *busy) {
    int peer = 1 - rank;
    /* Rank 0 sends (recv, send), rank 1 receives; who computes is the mode's name. */
    int sends = mode == BOTH || rank == 0;
    int recvs = mode == BOTH || rank == 1;
    int computes = mode == BOTH || (mode == RECV ? rank == 1 : rank == 0);
    MPI_Request req[2];
    int n = 0;
    if (sends)
        for (size_t i = 0; i < size; i++)
            sbuf[i] = byte_of(rank, it, i);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    if (recvs)
        MPI_Irecv(rbuf, (int)size, MPI_BYTE, peer, it, MPI_COMM_WORLD, &req[n++]);
    if (sends)
        MPI_Isend(sbuf, (int)size, MPI_BYTE, peer, it, MPI_COMM_WORLD, &req[n++]);
    if (secs > 0 && computes) {
        double c0 = now();
        work((long)(secs * steps_per_sec));
        *busy += now() - c0;
    }
    MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    double t = now() - t0;
    if (recvs)
        for (size_t i = 0; i < size; i++)
            if (rbuf[i] != byte_of(peer, it, i)) {
                (*errors)++;
                break;
            }
    return t;
}

int main(int argc, char **argv) {
    int multiple = 0, provided;
    for (int a = 1; a < argc; a++)
        if (!strcmp(argv[a], "-m"))
            multiple = 1;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int iters = 50;
    double factor = 1.0, rate = 0;
    enum mode mode = BOTH;
    size_t sizes[32];
    int nsizes = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-n") && a + 1 < argc)
            iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "-m"))
            continue;
        else if (!strcmp(argv[a], "-c") && a + 1 < argc)
            factor = atof(argv[++a]);
        else if (!strcmp(argv[a], "-r") && a + 1 < argc)
            rate = atof(argv[++a]);
        else if (!strcmp(argv[a], "both"))
            mode = BOTH;
        else if (!strcmp(argv[a], "recv"))
            mode = RECV;
        else if (!strcmp(argv[a], "send"))
            mode = SEND;
        else if (nsizes < 32)
            sizes[nsizes++] = strtoul(argv[a], NULL, 0);
    }
    if (nsizes == 0) {
        size_t d[] = {16384, 65536, 262144, 1048576, 4194304};
        for (int i = 0; i < 5; i++)
            sizes[nsizes++] = d[i];
    }
    if (np < 2 || iters < 1 || !(factor > 0) || rate < 0) {
        if (rank == 0)
            fprintf(stderr, "overlap: needs 2 ranks or more, -n >= 1, -c > 0 and -r >= 0\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int errors = 0;
    steps_per_sec = calibrate();
    /* The rank whose times are reported: one that computes. */
    int shown = mode == SEND ? 0 : 1;
    if (rank == 0)
        printf("# mode %s, computing %g x the pure time%s; times of rank %d\n"
               "# %-10s %12s %12s %12s %10s\n",
               mode == BOTH ? "both" : mode == RECV ? "recv" : "send", rate > 0 ? 0 : factor,
               rate > 0 ? " (0: SIZE / MBPS instead)" : "", shown, "Size",
               "Overall(us)", "Compute(us)", "Pure(us)", "Overlap(%)");
    for (int s = 0; s < nsizes; s++) {
        size_t size = sizes[s];
        unsigned char *sbuf = malloc(size + 1), *rbuf = malloc(size + 1);
        double pure = 0, overall = 0, busy = 0;
        if (rank < 2) {
            for (int it = 0; it < iters + 5; it++) {
                double t = transfer(rank, mode, size, sbuf, rbuf, it, 0, &errors, &busy);
                if (it >= 5)
                    pure += t;
            }
            pure /= iters;
            /* Compute for the reported rank's pure time. */
            MPI_Bcast(&pure, 1, MPI_DOUBLE, shown, MPI_COMM_WORLD);
            double secs = rate > 0 ? size / (rate * 1e6) : pure * factor;
            for (int it = 0; it < iters; it++)
                overall += transfer(rank, mode, size, sbuf, rbuf, iters + 5 + it, secs, &errors,
                                    &busy);
            overall /= iters;
            busy /= iters;
        } else {
            for (int it = 0; it < iters + 5; it++)
                MPI_Barrier(MPI_COMM_WORLD);
            MPI_Bcast(&pure, 1, MPI_DOUBLE, shown, MPI_COMM_WORLD);
            for (int it = 0; it < iters; it++)
                MPI_Barrier(MPI_COMM_WORLD);
        }
        if (shown != 0) {
            double t[2] = {overall, busy};
            if (rank == shown)
                MPI_Send(t, 2, MPI_DOUBLE, 0, 998, MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Recv(t, 2, MPI_DOUBLE, shown, 998, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                overall = t[0];
                busy = t[1];
            }
        }
        if (rank == 0) {
            double ov = 100.0 * (1.0 - (overall - busy) / pure);
            printf("%-12zu %12.2f %12.2f %12.2f %10.1f\n", size, overall * 1e6, busy * 1e6,
                   pure * 1e6, ov < 0 ? 0 : ov);
            fflush(stdout);
        }
        free(sbuf);
        free(rbuf);
    }
    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}
