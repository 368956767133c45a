/* MPI_Buffer_flush (MPI 4.1): buffered sends to the next rank, a flush while their receives
 * are posted, then the whole buffer is free again for a message as large as it allows. */
#include "coll_util.h"

#define N 100

int main(int argc, char **argv) {
    start(&argc, &argv);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int size_needed = 0, one;
    MPI_Pack_size(N, MPI_INT, MPI_COMM_WORLD, &one);
    size_needed = 4 * (one + MPI_BSEND_OVERHEAD);
    char *buf = malloc(size_needed);
    MPI_Buffer_attach(buf, size_needed);
    int out[4][N], in[4][N];
    MPI_Request rr[4];
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 4; k++)
            MPI_Irecv(in[k], N, MPI_INT, prev, k, MPI_COMM_WORLD, &rr[k]);
        for (int k = 0; k < 4; k++) {
            for (int i = 0; i < N; i++)
                out[k][i] = 1000 * rank + 10 * k + i + round;
            MPI_Bsend(out[k], N, MPI_INT, next, k, MPI_COMM_WORLD);
        }
        /* The buffer is full: flush empties it (the receives are posted). */
        MPI_Buffer_flush();
        MPI_Waitall(4, rr, MPI_STATUSES_IGNORE);
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < N; i++)
                CHECK(in[k][i] == 1000 * prev + 10 * k + i + round, "round %d msg %d [%d] = %d",
                      round, k, i, in[k][i]);
    }
    void *addr;
    int sz;
    MPI_Buffer_detach(&addr, &sz);
    CHECK(addr == buf && sz == size_needed, "detach");
    free(buf);
    return finish();
}
