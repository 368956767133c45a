/* Strong progress with the async progress thread (--mca mpi_async_progress 1): operations
 * complete while the rank they need waits outside MPI. That rank waits for a flag file that
 * the other ranks create once their side is done (argv[1]: a directory for the flags), so
 * without a progress thread each phase would hang (mpirun --timeout ends it).
 *   1. rendezvous: rank 1 posts a 4 MiB receive and leaves MPI; rank 0's send completes;
 *   2. eager flood: rank 1 posts 200 receives of 8 KiB (more than its rings hold) and leaves
 *      MPI; rank 0's 200 sends complete;
 *   3. passive-target RMA: rank 1 leaves MPI; rank 0 locks its window, puts, unlocks;
 *   4. non-blocking collective (np >= 3): rank 1 starts an MPI_Ibcast of 1 MiB from rank 0 and
 *      leaves MPI; the other ranks' MPI_Wait completes (a tree may forward through rank 1).
 * Every byte received is checked, once rank 1 is back in MPI. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir;
static int rank, np, errors;

static void flag_path(char *out, size_t cap, int phase, int who) {
    snprintf(out, cap, "%s/phase%d.rank%d", dir, phase, who);
}

/* The ranks other than 1 say their side of `phase` is done. */
static void done(int phase) {
    char p[4096];
    flag_path(p, sizeof p, phase, rank);
    FILE *f = fopen(p, "w");
    if (!f) {
        perror(p);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    fclose(f);
}

/* Rank 1, outside MPI: wait until every other rank taking part (`upto` ranks) is done. */
static void wait_outside(int phase, int upto) {
    char p[4096];
    for (int r = 0; r < upto; r++) {
        if (r == 1)
            continue;
        flag_path(p, sizeof p, phase, r);
        for (int i = 0; access(p, F_OK) != 0; i++) {
            if (i == 60000) {
                fprintf(stderr, "phase %d: rank %d made no progress in 60 s\n", phase, r);
                MPI_Abort(MPI_COMM_WORLD, 3);
            }
            usleep(1000);
        }
    }
}

static unsigned char byte_of(int phase, size_t i) { return (unsigned char)(phase * 31 + i * 7 + 3); }

static void fill(unsigned char *b, size_t n, int phase) {
    for (size_t i = 0; i < n; i++)
        b[i] = byte_of(phase, i);
}

static void check(const unsigned char *b, size_t n, int phase) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != byte_of(phase, i)) {
            fprintf(stderr, "phase %d: rank %d byte %zu is %d\n", phase, rank, i, b[i]);
            errors++;
            return;
        }
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 2 || np < 2) {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np N (N >= 2) async_progress FLAG_DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    dir = argv[1];

    /* 1. A rendezvous receive. */
    size_t big = 4 << 20;
    unsigned char *buf = malloc(big);
    MPI_Request req;
    if (rank == 1) {
        memset(buf, 0, big);
        MPI_Irecv(buf, (int)big, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req);
        wait_outside(1, 1);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        check(buf, big, 1);
    } else if (rank == 0) {
        fill(buf, big, 1);
        MPI_Send(buf, (int)big, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        done(1);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 2. More eager messages than the rings hold. */
    enum { N = 200, LEN = 8192 };
    MPI_Request reqs[N];
    if (rank == 1) {
        memset(buf, 0, (size_t)N * LEN);
        for (int i = 0; i < N; i++)
            MPI_Irecv(buf + (size_t)i * LEN, LEN, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &reqs[i]);
        wait_outside(2, 1);
        MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
        check(buf, (size_t)N * LEN, 2);
    } else if (rank == 0) {
        fill(buf, (size_t)N * LEN, 2);
        for (int i = 0; i < N; i++)
            MPI_Isend(buf + (size_t)i * LEN, LEN, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &reqs[i]);
        MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE);
        done(2);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. Passive-target RMA on a rank outside MPI. */
    size_t wlen = 64 << 10;
    unsigned char *wmem = calloc(wlen, 1);
    MPI_Win win;
    MPI_Win_create(wmem, (MPI_Aint)wlen, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    if (rank == 1) {
        wait_outside(3, 1);
        MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, win);
        check(wmem, wlen, 3);
        MPI_Win_unlock(1, win);
    } else if (rank == 0) {
        fill(buf, wlen, 3);
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win);
        MPI_Put(buf, (int)wlen, MPI_BYTE, 1, 0, (int)wlen, MPI_BYTE, win);
        MPI_Win_unlock(1, win);
        done(3);
    }
    MPI_Win_free(&win);
    free(wmem);

    /* 4. A non-blocking collective through a rank outside MPI. */
    if (np >= 3) {
        size_t blen = 1 << 20;
        if (rank == 0)
            fill(buf, blen, 4);
        else
            memset(buf, 0, blen);
        MPI_Ibcast(buf, (int)blen, MPI_BYTE, 0, MPI_COMM_WORLD, &req);
        if (rank == 1)
            wait_outside(4, np);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        if (rank != 1)
            done(4);
        check(buf, blen, 4);
    }

    int total = 0;
    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
