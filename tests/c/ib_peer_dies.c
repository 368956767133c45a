/* A peer dies in the middle of a stream of large messages: rank 1 receives a few, then kills
 * itself with SIGKILL while rank 0 keeps sending. The job must end (no hang) with an error. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LEN (1 << 20)

int main(int argc, char **argv) {
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char *buf = calloc(LEN, 1);
    for (int i = 0; i < 1000; i++) {
        if (rank == 0) {
            MPI_Send(buf, LEN, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        } else if (rank == 1) {
            if (i == 3) kill(getpid(), SIGKILL);
            MPI_Recv(buf, LEN, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    }
    printf("rank %d: the peer's death went unnoticed\n", rank);
    free(buf);
    MPI_Finalize();
    return 0;
}
