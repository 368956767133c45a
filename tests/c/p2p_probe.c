/* Probe and Iprobe: see source, tag and size of an arrived message (eager and rendezvous)
 * without receiving it, with ANY_SOURCE/ANY_TAG; then receive into a buffer sized from the
 * probe. Iprobe of a message nobody sends says no. */
#include "p2p_common.h"

int main(int argc, char **argv) {
    int rank, size, i, k, flag, cnt;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const int counts[] = {0, 3, 5000, 40000};

    MPI_Iprobe(MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, &flag, &st);
    CHECK(!flag, "iprobe found a message nobody sent");

    for (k = 0; k < 4; k++) {
        int n = counts[k];
        int *out = malloc((n + 1) * sizeof(int));
        for (i = 0; i < n; i++) out[i] = i + rank + k;
        MPI_Request req;
        MPI_Isend(out, n, MPI_INT, to, 10 + k, MPI_COMM_WORLD, &req);
        if (k % 2) {
            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        } else {
            do { MPI_Iprobe(from, 10 + k, MPI_COMM_WORLD, &flag, &st); } while (!flag);
        }
        MPI_Get_count(&st, MPI_INT, &cnt);
        CHECK(st.MPI_SOURCE == from && st.MPI_TAG == 10 + k && cnt == n,
              "rank %d: probe saw source %d tag %d count %d, expected %d %d %d", rank, st.MPI_SOURCE, st.MPI_TAG, cnt, from, 10 + k, n);
        MPI_Get_elements(&st, MPI_INT, &cnt);
        CHECK(cnt == n, "get_elements %d", cnt);
        MPI_Count big;
        MPI_Get_elements_x(&st, MPI_CHAR, &big);
        CHECK(big == (MPI_Count)n * 4, "get_elements_x %lld", (long long)big);
        /* probing again sees the same message */
        MPI_Probe(from, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        CHECK(st.MPI_TAG == 10 + k, "second probe tag %d", st.MPI_TAG);
        int *in = malloc((cnt + 1) * sizeof(int));
        MPI_Recv(in, cnt, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, &st);
        for (i = 0; i < n; i++) if (in[i] != i + from + k) break;
        CHECK(i == n, "rank %d: data wrong at %d", rank, i);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        free(in);
        free(out);
    }
    /* Get_count with a type that does not divide the size: MPI_UNDEFINED */
    char three[3] = {1, 2, 3};
    MPI_Sendrecv(three, 3, MPI_CHAR, to, 50, three, 3, MPI_CHAR, from, 50, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_SHORT, &cnt);
    CHECK(cnt == MPI_UNDEFINED, "get_count of 3 bytes as short gave %d", cnt);
    return finish();
}
