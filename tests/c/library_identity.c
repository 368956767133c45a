/* Which library this is: MPI_Abi_get_version must say 1.0 and MPI_Get_library_version must
 * name rmpi, its version and the build's features; every rank prints one line the test reads,
 * then " No Errors" from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int errs = 0, rank, major = -1, minor = -1, len = 0;
    char version[MPI_MAX_LIBRARY_VERSION_STRING];

    /* Both are callable before MPI_Init. */
    MPI_Get_library_version(version, &len);
    MPI_Abi_get_version(&major, &minor);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (major != 1 || minor != 0) {
        printf("rank %d: MPI_Abi_get_version gave %d.%d, not 1.0\n", rank, major, minor);
        errs++;
    }
    if (len != (int)strlen(version) || strncmp(version, "rmpi ", 5) != 0) {
        printf("rank %d: MPI_Get_library_version gave '%s' (%d)\n", rank, version, len);
        errs++;
    }
    printf("rank %d: abi %d.%d library '%s'\n", rank, major, minor, version);
    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && errs == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return errs != 0;
}
