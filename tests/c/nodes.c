/* For tests/tests/multinode.rs: every rank says where it runs ("ready RANK HOST PID"), then all
 * but rank 0 block in MPI_Barrier while rank 0 sleeps outside MPI, so that the test can kill a
 * rank, a daemon or mpirun with the job in a known state.
 *   nodes MARKER     (MARKER: only to be found in the process table) */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    MPI_Init(&argc, &argv);
    int rank;
    char host[256] = "?";
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gethostname(host, sizeof host);
    printf("ready %d %s %d\n", rank, host, (int)getpid());
    fflush(stdout);
    if (rank == 0)
        sleep(120);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
