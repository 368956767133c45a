// Built by CMake through FindMPI's MPI::MPI_CXX (the C API from C++: MPI 5.0 has no C++ bindings).
#include <mpi.h>
#include <cstdio>
#include <vector>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::vector<int> all(size, -1);
    MPI_Allgather(&rank, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        if (all[r] != r) {
            std::fprintf(stderr, "rank %d: all[%d] = %d\n", rank, r, all[r]);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (rank == 0) std::printf("cmake hello_cxx: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
