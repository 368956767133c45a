/* MPI_PROC_NULL everywhere: sends, receives, probes and persistent requests complete at once,
 * and a receive's status says source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, buffer untouched.
 * Also MPI_Sendrecv_replace around a ring and with PROC_NULL. */
#include "p2p_common.h"

static void check_null(const MPI_Status *st, const char *what) {
    int cnt;
    MPI_Get_count(st, MPI_INT, &cnt);
    CHECK(st->MPI_SOURCE == MPI_PROC_NULL && st->MPI_TAG == MPI_ANY_TAG && cnt == 0,
          "%s: status source %d tag %d count %d", what, st->MPI_SOURCE, st->MPI_TAG, cnt);
}

int main(int argc, char **argv) {
    int rank, size, flag, v[4] = {7, 7, 7, 7}, i;
    MPI_Status st;
    MPI_Request req, rs[2];
    MPI_Message msg;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int P = MPI_PROC_NULL;

    CHECK(MPI_Send(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "send");
    CHECK(MPI_Ssend(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "ssend");
    CHECK(MPI_Rsend(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "rsend");
    CHECK(MPI_Bsend(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "bsend without buffer to PROC_NULL");
    MPI_Recv(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD, &st);
    check_null(&st, "recv");
    CHECK(v[0] == 7, "recv touched the buffer");
    MPI_Irecv(v, 4, MPI_INT, P, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, &st);
    check_null(&st, "irecv");
    MPI_Isend(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD, &rs[0]);
    MPI_Issend(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD, &rs[1]);
    MPI_Testall(2, rs, &flag, MPI_STATUSES_IGNORE);
    CHECK(flag, "isend/issend to PROC_NULL not complete at once");
    MPI_Probe(P, 0, MPI_COMM_WORLD, &st);
    check_null(&st, "probe");
    MPI_Iprobe(P, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
    CHECK(flag, "iprobe of PROC_NULL");
    check_null(&st, "iprobe");
    MPI_Mprobe(P, 0, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC, "mprobe");
    MPI_Mrecv(v, 4, MPI_INT, &msg, &st);
    check_null(&st, "mrecv");
    MPI_Sendrecv(v, 4, MPI_INT, P, 0, v, 4, MPI_INT, P, 0, MPI_COMM_WORLD, &st);
    check_null(&st, "sendrecv");
    MPI_Sendrecv_replace(v, 4, MPI_INT, P, 0, P, 0, MPI_COMM_WORLD, &st);
    check_null(&st, "sendrecv_replace");
    CHECK(v[0] == 7, "sendrecv_replace with PROC_NULL touched the buffer");
    MPI_Recv_init(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD, &rs[0]);
    MPI_Send_init(v, 4, MPI_INT, P, 0, MPI_COMM_WORLD, &rs[1]);
    MPI_Startall(2, rs);
    MPI_Wait(&rs[0], &st);
    check_null(&st, "persistent recv");
    MPI_Wait(&rs[1], MPI_STATUS_IGNORE);
    MPI_Request_free(&rs[0]);
    MPI_Request_free(&rs[1]);

    /* Sendrecv_replace around the ring, eager and rendezvous sizes */
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    for (int n = 1; n <= 100000; n *= 10) {
        int *b = malloc(n * sizeof(int));
        for (i = 0; i < n; i++) b[i] = rank * 7 + i;
        MPI_Sendrecv_replace(b, n, MPI_INT, to, 3, from, 3, MPI_COMM_WORLD, &st);
        int cnt;
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == from && cnt == n, "replace status");
        for (i = 0; i < n; i++) if (b[i] != from * 7 + i) break;
        CHECK(i == n, "rank %d: replace of %d wrong at %d", rank, n, i);
        free(b);
    }
    return finish();
}
