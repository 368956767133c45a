/* Cancel: a posted receive that nothing matches is cancelled (Test_cancelled true, the buffer
 * untouched); a persistent receive run can be cancelled and started again; cancelling a send
 * does not cancel it here (it is delivered, Test_cancelled false), which MPI allows.
 * Also MPI_Status_set_* read back through MPI_Test_cancelled and MPI_Get_count. */
#include "p2p_common.h"

int main(int argc, char **argv) {
    int rank, size, flag, v = -1, i;
    MPI_Status st;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;

    /* receive nobody sends */
    MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 66, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag && v == -1 && req == MPI_REQUEST_NULL, "rank %d: receive not cancelled", rank);

    /* many cancelled receives among real ones: the real ones still match in order */
    MPI_Request r[10];
    int got[10];
    for (i = 0; i < 10; i++) MPI_Irecv(&got[i], 1, MPI_INT, from, 67, MPI_COMM_WORLD, &r[i]);
    for (i = 0; i < 10; i += 2) MPI_Cancel(&r[i]);
    MPI_Barrier(MPI_COMM_WORLD); /* no message before the cancels */
    for (i = 0; i < 5; i++) { v = rank * 10 + i; MPI_Send(&v, 1, MPI_INT, to, 67, MPI_COMM_WORLD); }
    for (i = 0; i < 10; i++) {
        MPI_Wait(&r[i], &st);
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag == (i % 2 == 0), "rank %d: receive %d cancelled=%d", rank, i, flag);
        if (i % 2) CHECK(got[i] == from * 10 + i / 2, "rank %d: receive %d got %d", rank, i, got[i]);
    }

    /* persistent receive: cancel one run, then use it */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Recv_init(&v, 1, MPI_INT, from, 68, MPI_COMM_WORLD, &req);
    MPI_Start(&req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag && req != MPI_REQUEST_NULL, "persistent run not cancelled");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Start(&req);
    int w = rank + 1000;
    MPI_Send(&w, 1, MPI_INT, to, 68, MPI_COMM_WORLD);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag && v == from + 1000, "persistent run after cancel got %d", v);
    MPI_Request_free(&req);

    /* a send: not cancelled, still delivered */
    w = rank + 2000;
    MPI_Isend(&w, 1, MPI_INT, to, 69, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "a send reported cancelled");
    MPI_Recv(&v, 1, MPI_INT, from, 69, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(v == from + 2000, "cancelled send not delivered: %d", v);
    /* Status_set_*: a status built by hand reads back through the query calls */
    MPI_Status made;
    int cnt;
    MPI_Status_set_cancelled(&made, 1);
    MPI_Status_set_elements(&made, MPI_INT, 5);
    MPI_Status_set_source(&made, 3);
    MPI_Status_set_tag(&made, 9);
    MPI_Status_set_error(&made, MPI_SUCCESS);
    MPI_Test_cancelled(&made, &flag);
    MPI_Get_count(&made, MPI_CHAR, &cnt);
    CHECK(flag && cnt == 20 && made.MPI_SOURCE == 3 && made.MPI_TAG == 9, "status_set: %d %d", flag, cnt);
    MPI_Status_set_cancelled(&made, 0);
    MPI_Test_cancelled(&made, &flag);
    CHECK(!flag, "status_set_cancelled 0");
    return finish();
}
