/* Thousands of outstanding requests: every rank posts 4000 receives (from both neighbours,
 * specific and ANY_SOURCE, posted in reverse tag order so matching scans the posted queue) and
 * 4000 sends, then completes them with Waitall, Waitsome or Testsome; data checked. */
#include "p2p_common.h"

#define N 4000

int main(int argc, char **argv) {
    int rank, size, i, round;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Request *r = malloc(2 * N * sizeof(MPI_Request));
    MPI_Status *st = malloc(2 * N * sizeof(MPI_Status));
    int *in = malloc(N * sizeof(int)), *out = malloc(N * sizeof(int)), *idx = malloc(2 * N * sizeof(int));

    for (round = 0; round < 3; round++) {
        for (i = 0; i < N; i++) {
            int tag = N - 1 - i; /* reverse order */
            in[tag] = -1;
            MPI_Irecv(&in[tag], 1, MPI_INT, round == 1 ? MPI_ANY_SOURCE : from, tag, MPI_COMM_WORLD, &r[i]);
        }
        for (i = 0; i < N; i++) {
            out[i] = rank * N + i + round;
            MPI_Isend(&out[i], 1, MPI_INT, to, i, MPI_COMM_WORLD, &r[N + i]);
        }
        if (round == 0) {
            MPI_Waitall(2 * N, r, st);
        } else if (round == 1) {
            int left = 2 * N, n;
            while (left > 0) {
                MPI_Waitsome(2 * N, r, &n, idx, MPI_STATUSES_IGNORE);
                left -= n;
            }
        } else {
            int left = 2 * N, n;
            while (left > 0) {
                MPI_Testsome(2 * N, r, &n, idx, st);
                left -= n;
            }
        }
        for (i = 0; i < 2 * N; i++) CHECK(r[i] == MPI_REQUEST_NULL, "request %d not freed", i);
        for (i = 0; i < N; i++)
            if (in[i] != from * N + i + round) { CHECK(0, "rank %d round %d: in[%d] = %d", rank, round, i, in[i]); break; }
    }
    /* thousands of unexpected messages, then received */
    for (i = 0; i < N; i++) {
        out[i] = i;
        MPI_Isend(&out[i], 1, MPI_INT, to, 1, MPI_COMM_WORLD, &r[i]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < N; i++) {
        MPI_Recv(&in[i], 1, MPI_INT, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (in[i] != i) { CHECK(0, "unexpected %d got %d", i, in[i]); break; }
    }
    MPI_Waitall(N, r, MPI_STATUSES_IGNORE);
    free(r); free(st); free(in); free(out); free(idx);
    return finish();
}
