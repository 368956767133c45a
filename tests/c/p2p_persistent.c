/* Persistent requests: Send_init/Ssend_init/Rsend_init/Recv_init with Start/Startall, reused
 * many times at eager and rendezvous sizes; an inactive request waits/tests at once with an
 * empty status; Request_free of inactive requests; Request_get_status does not free. */
#include "p2p_common.h"

#define N 50000

static void check_empty(const MPI_Status *st, const char *what) {
    int cnt;
    MPI_Get_count(st, MPI_INT, &cnt);
    CHECK(st->MPI_SOURCE == MPI_ANY_SOURCE && st->MPI_TAG == MPI_ANY_TAG && st->MPI_ERROR == MPI_SUCCESS && cnt == 0,
          "%s: not an empty status (source %d tag %d error %d count %d)", what, st->MPI_SOURCE, st->MPI_TAG, st->MPI_ERROR, cnt);
}

int main(int argc, char **argv) {
    int rank, size, i, k, flag, m;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
    const int counts[] = {1, 1000, N};
    MPI_Request r[2];
    MPI_Status st[2];

    for (m = 0; m < 3; m++) {
        for (int c = 0; c < 3; c++) {
            int n = counts[c];
            MPI_Recv_init(in, n, MPI_INT, from, 7, MPI_COMM_WORLD, &r[0]);
            if (m == 0) MPI_Send_init(out, n, MPI_INT, to, 7, MPI_COMM_WORLD, &r[1]);
            else if (m == 1) MPI_Ssend_init(out, n, MPI_INT, to, 7, MPI_COMM_WORLD, &r[1]);
            else MPI_Rsend_init(out, n, MPI_INT, to, 7, MPI_COMM_WORLD, &r[1]);
            /* inactive: complete at once with an empty status */
            MPI_Wait(&r[0], &st[0]);
            check_empty(&st[0], "wait on inactive");
            CHECK(r[0] != MPI_REQUEST_NULL, "wait freed an inactive persistent request");
            MPI_Test(&r[1], &flag, &st[1]);
            CHECK(flag, "test on inactive not done");
            check_empty(&st[1], "test on inactive");
            for (k = 0; k < 10; k++) {
                for (i = 0; i < n; i++) out[i] = i * 3 + k + rank * 11 + m;
                MPI_Start(&r[0]);
                if (m == 2) MPI_Barrier(MPI_COMM_WORLD); /* ready mode: the receive is posted */
                if (k % 2) MPI_Start(&r[1]);
                else MPI_Startall(1, &r[1]);
                MPI_Waitall(2, r, st);
                CHECK(r[0] != MPI_REQUEST_NULL && r[1] != MPI_REQUEST_NULL, "waitall freed persistent requests");
                int cnt;
                MPI_Get_count(&st[0], MPI_INT, &cnt);
                CHECK(cnt == n && st[0].MPI_SOURCE == from && st[0].MPI_TAG == 7, "rank %d mode %d: status wrong (count %d)", rank, m, cnt);
                for (i = 0; i < n; i++) if (in[i] != i * 3 + k + from * 11 + m) break;
                CHECK(i == n, "rank %d mode %d n %d run %d: data wrong at %d", rank, m, n, k, i);
            }
            /* get_status after completion does not free; then free inactive requests */
            MPI_Start(&r[0]);
            MPI_Start(&r[1]);
            do { MPI_Request_get_status(r[0], &flag, &st[0]); } while (!flag);
            MPI_Request_get_status(r[0], &flag, &st[0]);
            CHECK(flag && st[0].MPI_SOURCE == from, "get_status twice");
            MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
            MPI_Request_free(&r[0]);
            MPI_Request_free(&r[1]);
            CHECK(r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL, "free did not null the handles");
            if (m == 2) MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    /* Waitany over inactive persistent requests: MPI_UNDEFINED */
    MPI_Recv_init(in, 1, MPI_INT, from, 8, MPI_COMM_WORLD, &r[0]);
    MPI_Send_init(out, 1, MPI_INT, to, 8, MPI_COMM_WORLD, &r[1]);
    int idx;
    MPI_Waitany(2, r, &idx, &st[0]);
    CHECK(idx == MPI_UNDEFINED, "waitany over inactive requests gave %d", idx);
    MPI_Startall(2, r);
    int got = 0;
    while (got < 2) {
        MPI_Waitany(2, r, &idx, &st[0]);
        CHECK(idx == 0 || idx == 1, "waitany index %d", idx);
        got++;
    }
    MPI_Waitany(2, r, &idx, &st[0]);
    CHECK(idx == MPI_UNDEFINED, "waitany after both completed gave %d", idx);
    MPI_Request_free(&r[0]);
    MPI_Request_free(&r[1]);
    free(out);
    free(in);
    return finish();
}
