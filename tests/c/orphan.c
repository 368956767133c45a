/* A job left behind by its launcher: each rank says "ready" and then blocks in one state, for
 * tests/tests/failures.rs to SIGKILL mpirun and check that the ranks end by themselves.
 *   orphan MODE MARKER     MODE: preinit, recv, barrier, rndv, finalize (MARKER: only to be
 *                          found in the process table) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void ready(int rank)
{
    printf("ready %d\n", rank);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "recv";
    if (!strcmp(mode, "preinit")) {
        ready(-1);
        sleep(120);
    }
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int peer = 1 - rank;
    char b;
    if (!strcmp(mode, "recv") || (rank == 1 && strcmp(mode, "finalize"))) {
        ready(rank);
        MPI_Recv(&b, 1, MPI_CHAR, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(mode, "barrier")) {
        ready(rank);
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(mode, "rndv")) {
        /* Far above the eager limit: the send waits for a receive that is never posted. */
        size_t n = 16 << 20;
        char *big = calloc(n, 1);
        ready(rank);
        MPI_Send(big, (int)n, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
    } else if (!strcmp(mode, "finalize")) {
        ready(rank);
        if (rank == 0)
            MPI_Finalize(); /* waits for rank 1, which sleeps outside MPI */
        else
            sleep(120);
    }
    fprintf(stderr, "orphan: rank %d got out of mode %s\n", rank, mode);
    return 3;
}
