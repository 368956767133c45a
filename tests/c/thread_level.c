/* `--mca mpi_thread_level L`: plain MPI_Init asks for level L, as MPI_Init_thread would
 * (Open MPI's OMPI_MPI_THREAD_LEVEL). Prints what MPI_Query_thread reports, by name. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv) {
    int provided, rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Query_thread(&provided);
    if (rank == 0)
        printf("provided %s\n", provided == MPI_THREAD_SINGLE       ? "single"
                                : provided == MPI_THREAD_FUNNELED   ? "funneled"
                                : provided == MPI_THREAD_SERIALIZED ? "serialized"
                                : provided == MPI_THREAD_MULTIPLE   ? "multiple"
                                                                    : "?");
    MPI_Finalize();
    return 0;
}
