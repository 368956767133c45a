/* MPI_Ssend / MPI_Issend complete only once the receive has matched.
 * 1) Every rank Issends to itself: before it posts the receive, MPI_Test must say "not done".
 * 2) Pairs (2k, 2k+1): the even rank Issends; the odd rank posts the receive only after a
 *    "go" message the even rank sends after testing (flag must be 0). A send that completed
 *    early is reported; a send that never completes is caught by mpirun --timeout.
 * 3) Blocking Ssend: the odd rank probes the envelope, then sends a note, then receives. The
 *    note leaves before the receive is matched, so once Ssend returns it must be there. */
#include "p2p_common.h"

int main(int argc, char **argv) {
    int rank, size, flag, i, s;
    const int sizes[] = {0, 10, 1000, 100000};
    MPI_Status st;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char *out = malloc(100000), *in = malloc(100000);

    for (s = 0; s < 4; s++) {
        int n = sizes[s];
        for (i = 0; i < n; i++) out[i] = (char)(i * 7 + rank + s);
        /* 1: to self */
        MPI_Issend(out, n, MPI_CHAR, rank, 5, MPI_COMM_WORLD, &req);
        for (i = 0; i < 50; i++) {
            MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
            CHECK(!flag, "rank %d: Issend to self of %d bytes completed before the receive was posted", rank, n);
            if (flag) break;
        }
        MPI_Recv(in, n, MPI_CHAR, rank, 5, MPI_COMM_WORLD, &st);
        if (!flag) MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(memcmp(in, out, n) == 0, "rank %d: self ssend data of %d bytes wrong", rank, n);

        /* 2: pairs, non-blocking */
        int partner = rank ^ 1;
        if (partner < size) {
            if (rank % 2 == 0) {
                MPI_Issend(out, n, MPI_CHAR, partner, 1, MPI_COMM_WORLD, &req);
                for (i = 0; i < 50; i++) {
                    MPI_Test(&req, &flag, MPI_STATUS_IGNORE);
                    CHECK(!flag, "rank %d: Issend of %d bytes completed before the receive was posted", rank, n);
                    if (flag) break;
                }
                MPI_Send(NULL, 0, MPI_CHAR, partner, 2, MPI_COMM_WORLD); /* go */
                if (!flag) MPI_Wait(&req, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(NULL, 0, MPI_CHAR, partner, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Recv(in, n, MPI_CHAR, partner, 1, MPI_COMM_WORLD, &st);
                int cnt;
                MPI_Get_count(&st, MPI_CHAR, &cnt);
                CHECK(cnt == n && st.MPI_SOURCE == partner && st.MPI_TAG == 1, "rank %d: ssend status wrong", rank);
                for (i = 0; i < n; i++) if (in[i] != (char)(i * 7 + partner + s)) break;
                CHECK(i == n, "rank %d: ssend data of %d bytes wrong at %d", rank, n, i);
            }
            /* 3: pairs, blocking */
            if (rank % 2 == 0) {
                MPI_Ssend(out, n, MPI_CHAR, partner, 3, MPI_COMM_WORLD);
                MPI_Iprobe(partner, 4, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                CHECK(flag, "rank %d: Ssend of %d bytes returned before the receive was matched", rank, n);
                MPI_Recv(NULL, 0, MPI_CHAR, partner, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Probe(partner, 3, MPI_COMM_WORLD, &st);
                MPI_Send(NULL, 0, MPI_CHAR, partner, 4, MPI_COMM_WORLD); /* note */
                MPI_Recv(in, n, MPI_CHAR, partner, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
    }
    free(out);
    free(in);
    return finish();
}
