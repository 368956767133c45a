/* Windows of non-blocking sends whose sizes mix tiny messages (half a btl-sm cell line, behind
 * the short match header) with ones spanning several lines, between every pair of ranks at
 * once, on COMM_WORLD and on a duplicate: a tiny fragment leaves the next one starting in the
 * middle of a line, and every byte must still arrive where it belongs, in order. Sizes cycle
 * through 0-70 bytes with 113-4144-, 1000- and 5000-byte messages now and then; each message's
 * bytes say which sender, round, index and offset they are. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define WINDOW 150
#define ROUNDS 20

static int size_of(int i) {
    if (i % 37 == 36)
        return 5000;
    /* Now and then the sizes btl-sm sends as two halves (a MATCH and a CONT), at and near the
     * bounds for each ring size: 113-176 bytes in 4 lines, 305-560 in 16, 2097-4144 in 128. */
    static const int split_sizes[] = {113, 150, 176, 305, 400, 560, 2097, 3000, 4096, 4144};
    if (i % 13 == 12)
        return split_sizes[(i / 13) % 10];
    if (i % 11 == 10)
        return 1000;
    return (i * 7) % 71;
}

static unsigned char byte_of(int src, int round, int i, int k) {
    return (unsigned char)(src * 131 + round * 17 + i * 29 + k * 3 + (k >> 8));
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, np, errs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    int peers = np - 1;
    unsigned char **sbuf = malloc(sizeof(*sbuf) * WINDOW * (peers + 1));
    unsigned char **rbuf = malloc(sizeof(*rbuf) * WINDOW * (peers + 1));
    MPI_Request *req = malloc(sizeof(*req) * 2 * WINDOW * (peers + 1));
    for (int i = 0; i < WINDOW * (peers + 1); i++) {
        sbuf[i] = malloc(5001);
        rbuf[i] = malloc(5001);
    }
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Comm comm = round % 2 ? dup : MPI_COMM_WORLD;
        int nreq = 0;
        for (int p = 0; p < np; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < WINDOW; i++) {
                unsigned char *b = rbuf[p * WINDOW + i];
                for (int k = 0; k < 5001; k++)
                    b[k] = 0xee;
                MPI_Irecv(b, size_of(i), MPI_BYTE, p, i % 5, comm, &req[nreq++]);
            }
        }
        for (int p = 0; p < np; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < WINDOW; i++) {
                unsigned char *b = sbuf[p * WINDOW + i];
                for (int k = 0; k < size_of(i); k++)
                    b[k] = byte_of(rank, round, i, k);
                MPI_Isend(b, size_of(i), MPI_BYTE, p, i % 5, comm, &req[nreq++]);
            }
        }
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        for (int p = 0; p < np; p++) {
            if (p == rank)
                continue;
            for (int i = 0; i < WINDOW; i++) {
                unsigned char *b = rbuf[p * WINDOW + i];
                for (int k = 0; k < size_of(i); k++) {
                    if (b[k] != byte_of(p, round, i, k) && errs++ < 10)
                        printf("rank %d: from %d round %d message %d (%d bytes): byte %d is %d, "
                               "not %d\n",
                               rank, p, round, i, size_of(i), k, b[k], byte_of(p, round, i, k));
                }
                if (b[size_of(i)] != 0xee && errs++ < 10)
                    printf("rank %d: from %d message %d: written past its %d bytes\n", rank, p,
                           i, size_of(i));
            }
        }
    }
    MPI_Comm_free(&dup);
    int all;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", all);
    }
    for (int i = 0; i < WINDOW * (peers + 1); i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    free(sbuf);
    free(rbuf);
    free(req);
    MPI_Finalize();
    return 0;
}
