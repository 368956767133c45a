/* A plain MPI hello that any MPI builds (ours, Open MPI's and MPICH's mpicc), for the tests of
 * foreign binaries. Usage: hello_plain [SECONDS [ANY...]]: after MPI_Init, prints
 * "rank R of N" and stays SECONDS (default 0) before finalizing, so a run-time check always
 * finds it alive; further arguments are ignored (a marker to find the processes by). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, size;
    unsigned stay = argc > 1 ? (unsigned)atoi(argv[1]) : 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    printf("rank %d of %d\n", rank, size);
    fflush(stdout);
    while (stay > 0)
        stay = sleep(stay);
    MPI_Finalize();
    return 0;
}
