/* Shared by the p2p_*.c tests: an error counter and the MPICH-style " No Errors" ending. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errors = 0;
#define CHECK(c, ...) do { if (!(c)) { errors++; printf(__VA_ARGS__); printf("\n"); fflush(stdout); } } while (0)

/* Sum the error counts on rank 0 (point-to-point only), print the verdict, finalize. */
static int finish(void) {
    int rank, size, total = errors, e, r;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD); /* no test's wildcard receive may see the counts */
    if (rank == 0) {
        for (r = 1; r < size; r++) {
            MPI_Recv(&e, 1, MPI_INT, r, 999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
        if (total == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    } else {
        MPI_Send(&errors, 1, MPI_INT, 0, 999, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
