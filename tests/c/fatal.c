/* The default error handler (MPI_ERRORS_ARE_FATAL): a send to a rank that does not exist
 * must print a message naming the call and the error class, and end the job. */
#include <mpi.h>

int main(int argc, char **argv) {
    int size, x = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Send(&x, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
