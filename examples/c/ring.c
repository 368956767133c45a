/*
 * ring.c -- pass a token around all ranks for a few laps.
 *
 * Rank 0 starts a token at 0 and sends it to rank 1; every rank adds its own
 * rank and passes the token on to (rank + 1) % size, back to rank 0, which
 * starts the next lap.  After L laps the token must equal
 * L * (0 + 1 + ... + size-1).  Rank 0 checks it and prints "ring: OK", or
 * prints what went wrong and exits non-zero.  Every receive also checks the
 * status (MPI_SOURCE, MPI_TAG, MPI_Get_count).
 *
 * Usage: ring [laps]   (default 3)
 *
 * Build:  mpicc -O2 -o ring ring.c        Run:  mpirun -np 4 ./ring
 */
#include <mpi.h>
#include <stdio.h>
#include <limits.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        int check_rc_ = (call);                                              \
        if (check_rc_ != MPI_SUCCESS) {                                      \
            fprintf(stderr, "ring: %s failed with error %d (%s:%d)\n",       \
                    #call, check_rc_, __FILE__, __LINE__);                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                    \
        }                                                                    \
    } while (0)

#define TAG_BASE 100

static void check_status(int rank, const MPI_Status *st, int source, int tag)
{
    int count = -1;
    CHECK(MPI_Get_count(st, MPI_INT, &count));
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || count != 1) {
        fprintf(stderr,
                "ring: rank %d: bad status: MPI_SOURCE %d (expected %d), "
                "MPI_TAG %d (expected %d), count %d (expected 1)\n",
                rank, st->MPI_SOURCE, source, st->MPI_TAG, tag, count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

int main(int argc, char **argv)
{
    int rank, size, next, prev, lap, laps = 3;
    int token = 0;
    long long expected;
    MPI_Status st;

    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));

    if (argc > 1) {
        laps = atoi(argv[1]);
        if (laps < 1) {
            if (rank == 0)
                fprintf(stderr, "ring: laps must be a positive number, got '%s'\n", argv[1]);
            MPI_Finalize();
            return 2;
        }
    }

    expected = (long long)laps * ((long long)size * (size - 1) / 2);
    if (expected > INT_MAX) {
        if (rank == 0)
            fprintf(stderr, "ring: %d laps over %d ranks would overflow an int token\n", laps, size);
        MPI_Finalize();
        return 2;
    }

    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    for (lap = 0; lap < laps; lap++) {
        int tag = TAG_BASE + lap;
        if (rank == 0) {
            /* Isend, so that a ring of one (rank 0 sending to itself) works
               too; `out`, because a send buffer must not change until the
               send completes. */
            int out = token;
            MPI_Request req;
            CHECK(MPI_Isend(&out, 1, MPI_INT, next, tag, MPI_COMM_WORLD, &req));
            CHECK(MPI_Recv(&token, 1, MPI_INT, prev, tag, MPI_COMM_WORLD, &st));
            CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE));
            check_status(rank, &st, prev, tag);
            token += rank;
        } else {
            /* Wildcards here, so that the status must tell who sent what. */
            CHECK(MPI_Recv(&token, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           MPI_COMM_WORLD, &st));
            check_status(rank, &st, prev, tag);
            token += rank;
            CHECK(MPI_Send(&token, 1, MPI_INT, next, tag, MPI_COMM_WORLD));
        }
    }

    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (rank == 0) {
        printf("ring: %d laps over %d ranks, token %d (expected %lld)\n",
               laps, size, token, expected);
        if ((long long)token != expected) {
            fprintf(stderr, "ring: FAILED: token is %d, expected %lld\n", token, expected);
            fflush(stdout);
            MPI_Finalize();
            return 1;
        }
        printf("ring: OK\n");
        fflush(stdout);
    }

    CHECK(MPI_Finalize());
    return 0;
}
