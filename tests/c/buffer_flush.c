/* MPI 4.1 buffers: MPI_Buffer_flush with the receives posted; MPI_Buffer_iflush before the
 * receives (a send to self, then the receive, then the wait); a communicator's own buffer
 * (MPI_Comm_attach_buffer) used by buffered sends on it while the process has none, its
 * flush, iflush and detach. */
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
    /* iflush before the matching receive is posted */
    int big = 1 << 16, *bs = malloc(big * sizeof(int)), *br = malloc(big * sizeof(int));
    for (int i = 0; i < big; i++)
        bs[i] = i ^ rank;
    void *addr;
    int sz;
    MPI_Buffer_detach(&addr, &sz);
    CHECK(addr == buf && sz == size_needed, "detach");
    int bigbuf = big * sizeof(int) + MPI_BSEND_OVERHEAD;
    char *b2 = malloc(bigbuf);
    MPI_Buffer_attach(b2, bigbuf);
    MPI_Request fl;
    MPI_Bsend(bs, big, MPI_INT, rank, 9, MPI_COMM_WORLD);
    MPI_Buffer_iflush(&fl);
    MPI_Recv(br, big, MPI_INT, rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Wait(&fl, MPI_STATUS_IGNORE);
    CHECK(br[big - 1] == ((big - 1) ^ rank), "iflush message");
    /* the buffer is free again: the same message fits */
    MPI_Bsend(bs, big, MPI_INT, rank, 9, MPI_COMM_WORLD);
    MPI_Recv(br, big, MPI_INT, rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Buffer_detach(&addr, &sz);
    CHECK(addr == b2 && sz == bigbuf, "detach 2");

    /* a communicator's own buffer; the process has none now */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_attach_buffer(dup, b2, bigbuf);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bsend(bs, 1, MPI_INT, rank, 1, MPI_COMM_WORLD), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "no process buffer: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Bsend(bs, big, MPI_INT, next, 2, dup);
    MPI_Comm_iflush_buffer(dup, &fl);
    MPI_Recv(br, big, MPI_INT, prev, 2, dup, MPI_STATUS_IGNORE);
    MPI_Wait(&fl, MPI_STATUS_IGNORE);
    CHECK(br[5] == (5 ^ prev), "comm buffer message");
    MPI_Irecv(br, big, MPI_INT, prev, 3, dup, &rr[0]);
    MPI_Bsend(bs, big, MPI_INT, next, 3, dup);
    MPI_Comm_flush_buffer(dup);
    MPI_Wait(&rr[0], MPI_STATUS_IGNORE);
    MPI_Count csz;
    MPI_Comm_detach_buffer_c(dup, &addr, &csz);
    CHECK(addr == b2 && csz == bigbuf, "comm detach");
    MPI_Comm_free(&dup);
    free(b2);
    free(bs);
    free(br);
    free(buf);
    return finish();
}
