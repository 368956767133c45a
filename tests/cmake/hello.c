/* Built by CMake through FindMPI's MPI::MPI_C: a sum over COMM_WORLD, checked. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int rank, size, sum = -1, len;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (sum != size * (size - 1) / 2) {
        fprintf(stderr, "rank %d: sum %d, expected %d\n", rank, sum, size * (size - 1) / 2);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Get_library_version(lib, &len);
    if (rank == 0) printf("cmake hello_c: %d ranks ok: %s\n", size, lib);
    MPI_Finalize();
    return 0;
}
