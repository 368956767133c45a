/* MPI_Irsend (the one send mode no other test starts): the receive is posted before a barrier,
 * then every rank ready-sends to its ring successor, small and rendezvous-sized; also to
 * MPI_PROC_NULL, which completes at once with an empty status. */
#include "p2p_common.h"

#define BIG 40000

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int *s = malloc(BIG * sizeof(int)), *r = malloc(BIG * sizeof(int));
    for (int n = 1; n <= BIG; n *= 200) {
        for (int i = 0; i < n; i++) {
            s[i] = rank * 7 + i;
            r[i] = -1;
        }
        MPI_Request rr, sr;
        MPI_Irecv(r, n, MPI_INT, prev, 5, MPI_COMM_WORLD, &rr);
        MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted: a ready send is valid */
        MPI_Irsend(s, n, MPI_INT, next, 5, MPI_COMM_WORLD, &sr);
        MPI_Status st;
        MPI_Wait(&sr, MPI_STATUS_IGNORE);
        MPI_Wait(&rr, &st);
        int bad = 0, cnt = -1;
        for (int i = 0; i < n; i++)
            bad += r[i] != prev * 7 + i;
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(bad == 0 && cnt == n && st.MPI_SOURCE == prev, "rank %d: irsend of %d ints: %d wrong, count %d",
              rank, n, bad, cnt);
    }
    MPI_Request pr;
    MPI_Status pst;
    MPI_Irsend(s, 4, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &pr);
    MPI_Wait(&pr, &pst);
    CHECK(pr == MPI_REQUEST_NULL, "rank %d: irsend to PROC_NULL left a request", rank);
    free(s);
    free(r);
    return finish();
}
