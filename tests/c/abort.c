/* Rank 1 calls MPI_Abort(MPI_COMM_WORLD, 5) while the others wait in a receive. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int rank, x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 1) {
        usleep(100000);
        MPI_Abort(MPI_COMM_WORLD, 5);
    }
    MPI_Recv(&x, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Finalize();
    return 0;
}
