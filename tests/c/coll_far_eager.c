/* Collectives between sm's eager limit toward far peers and its eager limit (12 KiB), every
 * byte checked, beside one point-to-point message of the same size: the test runs it with every
 * pair probed far and counts the rendezvous receives (only the point-to-point one should be). */
#include "coll_util.h"

int main(int argc, char **argv) {
    start(&argc, &argv);
    enum { N = 3000 }; /* ints: 12000 bytes */
    static int buf[N], in[N], out[N];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < N; i++)
            buf[i] = rank == root ? i * 7 + root : -1;
        MPI_Bcast(buf, N, MPI_INT, root, MPI_COMM_WORLD);
        int bad = 0;
        for (int i = 0; i < N; i++)
            bad += buf[i] != i * 7 + root;
        CHECK(bad == 0, "bcast root %d: %d wrong", root, bad);
    }
    for (int i = 0; i < N; i++)
        in[i] = i + rank;
    MPI_Allreduce(in, out, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < N; i++)
        bad += out[i] != i * size + size * (size - 1) / 2;
    CHECK(bad == 0, "allreduce: %d wrong", bad);
    if (size > 1) {
        if (rank == 0)
            MPI_Send(in, N, MPI_INT, 1, 5, MPI_COMM_WORLD);
        if (rank == 1) {
            MPI_Recv(buf, N, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            bad = 0;
            for (int i = 0; i < N; i++)
                bad += buf[i] != i;
            CHECK(bad == 0, "send: %d wrong", bad);
        }
    }
    return finish();
}
