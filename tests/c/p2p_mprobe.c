/* Matched probes: Mprobe/Improbe take the message out of matching, so a later receive with
 * wildcards gets the next one; Mrecv/Imrecv receive it. Eager, multi-fragment eager and
 * rendezvous sizes; MPI_MESSAGE_NO_PROC for MPI_PROC_NULL. */
#include "p2p_common.h"

int main(int argc, char **argv) {
    int rank, size, i, k, flag, cnt;
    MPI_Status st;
    MPI_Message msg;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const int counts[] = {1, 100, 4000, 30000, 300000};
    int maxn = 300000;
    int *a = malloc(maxn * sizeof(int)), *b = malloc(maxn * sizeof(int));
    int *ia = malloc(maxn * sizeof(int)), *ib = malloc(maxn * sizeof(int));

    for (k = 0; k < 5; k++) {
        int n = counts[k];
        for (i = 0; i < n; i++) { a[i] = i + rank; b[i] = -i - rank; }
        MPI_Request s[2];
        MPI_Isend(a, n, MPI_INT, to, 1 + 10 * k, MPI_COMM_WORLD, &s[0]);
        MPI_Isend(b, n, MPI_INT, to, 2 + 10 * k, MPI_COMM_WORLD, &s[1]);
        if (k % 2) {
            MPI_Mprobe(from, 1 + 10 * k, MPI_COMM_WORLD, &msg, &st);
        } else {
            do { MPI_Improbe(MPI_ANY_SOURCE, 1 + 10 * k, MPI_COMM_WORLD, &flag, &msg, &st); } while (!flag);
        }
        CHECK(msg != MPI_MESSAGE_NULL && msg != MPI_MESSAGE_NO_PROC, "no message handle");
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 1 + 10 * k && cnt == n, "rank %d: mprobe status %d %d %d", rank, st.MPI_SOURCE, st.MPI_TAG, cnt);
        /* the matched message is no longer visible: a wildcard receive gets tag 2 */
        MPI_Iprobe(from, 1 + 10 * k, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "rank %d: the matched message is still visible to iprobe", rank);
        MPI_Recv(ib, n, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_TAG == 2 + 10 * k, "rank %d n %d: wildcard receive got tag %d", rank, n, st.MPI_TAG);
        if (k % 2) {
            MPI_Mrecv(ia, n, MPI_INT, &msg, &st);
        } else {
            MPI_Imrecv(ia, n, MPI_INT, &msg, &req);
            MPI_Wait(&req, &st);
        }
        CHECK(msg == MPI_MESSAGE_NULL, "mrecv did not reset the handle");
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 1 + 10 * k && cnt == n, "mrecv status");
        MPI_Barrier(MPI_COMM_WORLD); /* nothing of the next round may meet this round's wildcard */
        for (i = 0; i < n; i++) if (ia[i] != i + from || ib[i] != -i - from) break;
        CHECK(i == n, "rank %d n %d: data wrong at %d", rank, n, i);
        MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
    }
    /* several matched messages held at once, received in reverse order */
    MPI_Message m[4];
    MPI_Request s[4];
    for (i = 0; i < 4; i++) { a[i] = rank * 10 + i; MPI_Isend(&a[i], 1, MPI_INT, to, 5, MPI_COMM_WORLD, &s[i]); }
    for (i = 0; i < 4; i++) MPI_Mprobe(from, 5, MPI_COMM_WORLD, &m[i], MPI_STATUS_IGNORE);
    for (i = 3; i >= 0; i--) {
        MPI_Mrecv(&ia[i], 1, MPI_INT, &m[i], MPI_STATUS_IGNORE);
        CHECK(ia[i] == from * 10 + i, "held message %d: %d", i, ia[i]);
    }
    MPI_Waitall(4, s, MPI_STATUSES_IGNORE);

    /* PROC_NULL */
    MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &st);
    CHECK(msg == MPI_MESSAGE_NO_PROC && st.MPI_SOURCE == MPI_PROC_NULL, "mprobe of PROC_NULL");
    MPI_Mrecv(ia, 10, MPI_INT, &msg, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(msg == MPI_MESSAGE_NULL && st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && cnt == 0, "mrecv of NO_PROC");
    MPI_Improbe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &flag, &msg, &st);
    CHECK(flag && msg == MPI_MESSAGE_NO_PROC, "improbe of PROC_NULL");
    MPI_Imrecv(ia, 10, MPI_INT, &msg, &req);
    MPI_Wait(&req, &st);
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "imrecv of NO_PROC");
    free(a); free(b); free(ia); free(ib);
    return finish();
}
