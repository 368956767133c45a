/* The classic registration-cache failure: rank 0 mallocs a large buffer, sends it (registered
 * and cached), frees it, mallocs again so the same address now maps new pages, fills it with
 * new data and sends again. Rank 1 must receive the new data every time.
 * Prints "same address N/M" (how often malloc gave the freed address back) and " No Errors". */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN (4 << 20)
#define ROUNDS 6

/* Memory mapped up front and first touched right after a free: it takes the page frames the
 * freed buffer gave back (the kernel reuses recently freed frames first), so that the buffer
 * malloc'ed next at the same address gets other frames, as it would in a long-running
 * program, instead of, by chance, the very same ones. */
static unsigned char *spacer[ROUNDS];

int main(int argc, char **argv) {
    int rank, errs = 0, same = 0;
    /* glibc raises its mmap threshold after the first free of an mmap'ed block, and later
     * blocks of that size then come from the heap and stay mapped: fix the threshold so every
     * free really returns the pages, as in a program whose large blocks vary in size. */
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char *prev = NULL;
    unsigned char *rbuf = rank == 1 ? malloc(LEN) : NULL;
    if (rank == 0)
        for (int r = 0; r < ROUNDS; r++) spacer[r] = malloc(LEN);
    for (int round = 0; round < ROUNDS; round++) {
        unsigned char fill = (unsigned char)(0x11 * (round + 1));
        if (rank == 0) {
            unsigned char *buf = malloc(LEN);
            if (buf == prev) same++;
            memset(spacer[round], 1, LEN);
            memset(buf, fill, LEN);
            /* Twice from the same buffer: the second is a cache hit. */
            MPI_Send(buf, LEN, MPI_BYTE, 1, round, MPI_COMM_WORLD);
            MPI_Send(buf, LEN, MPI_BYTE, 1, round, MPI_COMM_WORLD);
            prev = buf;
            free(buf);
        } else if (rank == 1) {
            for (int k = 0; k < 2; k++) {
                memset(rbuf, 0, LEN);
                MPI_Recv(rbuf, LEN, MPI_BYTE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t i = 0; i < LEN; i += 4093) {
                    if (rbuf[i] != fill) {
                        printf("round %d copy %d: byte %zu is 0x%02x, expected 0x%02x: STALE DATA\n",
                               round, k, i, rbuf[i], fill);
                        errs++;
                        break;
                    }
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    if (rank == 0) printf("same address %d/%d\n", same, ROUNDS - 1);
    free(rbuf);
    if (rank == 0)
        for (int r = 0; r < ROUNDS; r++) free(spacer[r]);
    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
