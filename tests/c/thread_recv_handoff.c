/* MPI_THREAD_MULTIPLE, MPI_Recv's latency path (a direct receive that waits inside the runtime
 * while no other thread wants it): thread A of rank 0 waits in MPI_Recv for a message rank 1
 * sends only after it got one from thread B of rank 0, which calls MPI_Send 0-50 ms later; A
 * must give the runtime up to B (else the job hangs). Then one thread alone ping-pongs every
 * size from 0 B to 256 KiB with every byte checked, through the same path. Prints " No Errors". */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, errs;
static int delay_us;

static void *late_sender(void *arg)
{
    (void)arg;
    usleep(delay_us);
    int v = 7;
    MPI_Send(&v, 1, MPI_INT, 1, 2, MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (provided != MPI_THREAD_MULTIPLE) {
        printf("provided %d\n", provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int round = 0; round < 12; round++) {
        delay_us = (round % 4) * 16000;
        if (rank == 0) {
            pthread_t b;
            pthread_create(&b, NULL, late_sender, NULL);
            int v = 0;
            MPI_Recv(&v, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v != 8) errs++;
            pthread_join(b, NULL);
        } else if (rank == 1) {
            int v = 0;
            MPI_Recv(&v, 1, MPI_INT, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (v != 7) errs++;
            v = 8;
            MPI_Send(&v, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
        }
    }
    int max = 1 << 18;
    unsigned char *out = malloc(max), *in = malloc(max);
    for (int n = 0; n <= max; n = n ? n * 2 : 1) {
        for (int i = 0; i < n; i++) out[i] = (unsigned char)(i * 31 + n);
        memset(in, 0, n);
        MPI_Status st;
        int got = -1;
        if (rank == 0) {
            MPI_Send(out, n, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
            MPI_Recv(in, n, MPI_BYTE, 1, 3, MPI_COMM_WORLD, &st);
        } else if (rank == 1) {
            MPI_Recv(in, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, &st);
            MPI_Send(in, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
        if (rank < 2) {
            MPI_Get_count(&st, MPI_BYTE, &got);
            if (got != n || memcmp(in, out, n) != 0) {
                printf("size %d: %d bytes, contents %s\n", n, got, memcmp(in, out, n) ? "differ" : "ok");
                errs++;
            }
        }
    }
    free(out);
    free(in);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
