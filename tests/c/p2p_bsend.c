/* Buffered sends: MPI_Bsend/MPI_Ibsend/MPI_Bsend_init copy into the attached buffer, so the
 * user buffer is reusable at once; a message that does not fit is MPI_ERR_BUFFER; detach
 * waits for messages still in flight (a large one needs the receiver); MPI_BUFFER_AUTOMATIC. */
#include "p2p_common.h"

#define BIG 100000
#define NSMALL 20

int main(int argc, char **argv) {
    int rank, size, i, k, err, cls, n;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int bufsize = NSMALL * (100 * sizeof(int) + MPI_BSEND_OVERHEAD) + BIG + MPI_BSEND_OVERHEAD;
    char *attach = malloc(bufsize), *big = malloc(BIG), *bigin = malloc(BIG);
    int small[100], in[100];
    void *det;
    MPI_Request req;

    /* no buffer yet */
    err = MPI_Bsend(small, 1, MPI_INT, to, 0, MPI_COMM_WORLD);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "rank %d: Bsend without a buffer gave class %d", rank, cls);
    err = MPI_Buffer_detach(&det, &n);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "rank %d: detach without a buffer gave class %d", rank, cls);

    CHECK(MPI_Buffer_attach(attach, bufsize) == MPI_SUCCESS, "attach failed");
    err = MPI_Buffer_attach(attach, bufsize);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "rank %d: second attach gave class %d", rank, cls);

    for (k = 0; k < 3; k++) {
        /* the big one first: it waits in the buffer until the receiver matches it */
        for (i = 0; i < BIG; i++) big[i] = (char)(i + rank + k);
        CHECK(MPI_Bsend(big, BIG, MPI_CHAR, to, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "big bsend failed");
        memset(big, 0, BIG); /* reusable at once */
        for (i = 0; i < NSMALL; i++) {
            for (int j = 0; j < 100; j++) small[j] = rank * 1000 + i * 10 + j + k;
            if (i % 3 == 0) {
                CHECK(MPI_Ibsend(small, 100, MPI_INT, to, 2, MPI_COMM_WORLD, &req) == MPI_SUCCESS, "ibsend");
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                CHECK(MPI_Bsend(small, 100, MPI_INT, to, 2, MPI_COMM_WORLD) == MPI_SUCCESS, "bsend %d", i);
            }
            memset(small, 0xff, sizeof small);
        }
        /* a message larger than the whole buffer never fits */
        err = MPI_Bsend(big, bufsize, MPI_CHAR, to, 3, MPI_COMM_WORLD);
        MPI_Error_class(err, &cls);
        CHECK(cls == MPI_ERR_BUFFER, "rank %d: oversized bsend gave class %d", rank, cls);

        for (i = 0; i < NSMALL; i++) {
            MPI_Recv(in, 100, MPI_INT, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            for (int j = 0; j < 100; j++)
                if (in[j] != from * 1000 + i * 10 + j + k) { CHECK(0, "rank %d: small %d wrong at %d", rank, i, j); break; }
        }
        MPI_Recv(bigin, BIG, MPI_CHAR, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        for (i = 0; i < BIG; i++) if (bigin[i] != (char)(i + from + k)) break;
        CHECK(i == BIG, "rank %d: big message wrong at %d", rank, i);
        /* the big send left our buffer once `to` received it: its ack comes after its FIN */
        MPI_Sendrecv(NULL, 0, MPI_CHAR, from, 9, NULL, 0, MPI_CHAR, to, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }

    /* persistent buffered send */
    MPI_Bsend_init(small, 100, MPI_INT, to, 4, MPI_COMM_WORLD, &req);
    for (k = 0; k < 5; k++) {
        small[0] = k + rank;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Recv(in, 100, MPI_INT, from, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(in[0] == k + from, "rank %d: bsend_init run %d got %d", rank, k, in[0]);
    }
    MPI_Request_free(&req);

    CHECK(MPI_Buffer_detach(&det, &n) == MPI_SUCCESS, "detach failed");
    CHECK(det == attach && n == bufsize, "rank %d: detach gave %p/%d, not %p/%d", rank, det, n, (void *)attach, bufsize);

    /* automatic buffering */
    CHECK(MPI_Buffer_attach(MPI_BUFFER_AUTOMATIC, 0) == MPI_SUCCESS, "attach automatic failed");
    for (i = 0; i < BIG; i++) big[i] = (char)(3 * i + rank);
    CHECK(MPI_Bsend(big, BIG, MPI_CHAR, to, 5, MPI_COMM_WORLD) == MPI_SUCCESS, "automatic bsend");
    memset(big, 0, BIG);
    MPI_Recv(bigin, BIG, MPI_CHAR, from, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < BIG; i++) if (bigin[i] != (char)(3 * i + from)) break;
    CHECK(i == BIG, "rank %d: automatic big message wrong at %d", rank, i);
    CHECK(MPI_Buffer_detach(&det, &n) == MPI_SUCCESS && det == MPI_BUFFER_AUTOMATIC, "detach automatic");

    free(attach);
    free(big);
    free(bigin);
    return finish();
}
