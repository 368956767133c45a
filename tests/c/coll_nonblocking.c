/* Many non-blocking collectives outstanding at once, completed by Waitall, Test loops and Wait
 * in reverse order; a collective on WORLD while point-to-point traffic is in flight on WORLD. */
#include "coll_util.h"

#define K 40

int main(int argc, char **argv) {
    start(&argc, &argv);
    /* K allreduces, bcasts, barriers and allgathers in flight together. */
    int in[K], out[K], bc[K][4], ag[K][64];
    MPI_Request reqs[4 * K];
    int nr = 0;
    for (int k = 0; k < K; k++) {
        in[k] = rank + k;
        out[k] = -1;
        for (int j = 0; j < 4; j++)
            bc[k][j] = rank == k % size ? k * 10 + j : -1;
        MPI_Iallreduce(&in[k], &out[k], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[nr++]);
        MPI_Ibcast(bc[k], 4, MPI_INT, k % size, MPI_COMM_WORLD, &reqs[nr++]);
        MPI_Ibarrier(MPI_COMM_WORLD, &reqs[nr++]);
        int mine = rank * 1000 + k;
        MPI_Iallgather(&mine, 1, MPI_INT, ag[k], 1, MPI_INT, MPI_COMM_WORLD, &reqs[nr++]);
        /* `mine` goes out of scope: a send buffer must live until completion, so wait for
         * this one now (the others stay outstanding). */
        MPI_Wait(&reqs[nr - 1], MPI_STATUS_IGNORE);
    }
    MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
    for (int k = 0; k < K; k++) {
        CHECK(out[k] == size * (size - 1) / 2 + size * k, "iallreduce %d: %d", k, out[k]);
        for (int j = 0; j < 4; j++)
            CHECK(bc[k][j] == k * 10 + j, "ibcast %d", k);
        for (int r = 0; r < size; r++)
            CHECK(ag[k][r] == r * 1000 + k, "iallgather %d", k);
    }

    /* Completion by MPI_Test polling, and Wait in reverse order. */
    double big[4096], bigout[4096];
    for (int i = 0; i < 4096; i++)
        big[i] = rank + i;
    MPI_Request r1, r2;
    MPI_Iallreduce(big, bigout, 4096, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &r1);
    MPI_Ibarrier(MPI_COMM_WORLD, &r2);
    int flag = 0;
    while (!flag)
        MPI_Test(&r1, &flag, MPI_STATUS_IGNORE);
    CHECK(r1 == MPI_REQUEST_NULL, "tested request not freed");
    MPI_Wait(&r2, MPI_STATUS_IGNORE);
    for (int i = 0; i < 4096; i++)
        CHECK(bigout[i] == size - 1 + i, "test-polled iallreduce [%d]", i);
    MPI_Request rr[3];
    int a = rank, s1 = 0, s2 = 0, s3 = 0;
    MPI_Iallreduce(&a, &s1, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rr[0]);
    MPI_Iallreduce(&a, &s2, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &rr[1]);
    MPI_Iscan(&a, &s3, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &rr[2]);
    for (int i = 2; i >= 0; i--)
        MPI_Wait(&rr[i], MPI_STATUS_IGNORE);
    CHECK(s1 == size * (size - 1) / 2 && s2 == size - 1 && s3 == rank * (rank + 1) / 2, "reverse waits");

    /* Point-to-point on WORLD in flight across blocking and non-blocking collectives on WORLD,
     * with tags a collective could be confused by (0, 1, 2, ...). */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* A wildcard receive posted across collectives only ever matches point-to-point traffic. */
    int wild = -1, wmsg = 4242 + rank;
    MPI_Status wst;
    MPI_Request wr;
    MPI_Irecv(&wild, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &wr);
    int z = rank, zs = 0;
    MPI_Allreduce(&z, &zs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Bcast(&z, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Send(&wmsg, 1, MPI_INT, right, 77, MPI_COMM_WORLD);
    MPI_Wait(&wr, &wst);
    CHECK(wild == 4242 + left && wst.MPI_SOURCE == left && wst.MPI_TAG == 77, "wildcard receive got %d from %d tag %d", wild, wst.MPI_SOURCE, wst.MPI_TAG);
    int pin[8], pout[8];
    MPI_Request p2p[16];
    for (int t = 0; t < 8; t++) {
        pout[t] = rank * 100 + t;
        MPI_Irecv(&pin[t], 1, MPI_INT, left, t, MPI_COMM_WORLD, &p2p[t]);
    }
    static int vec[200000], res[200000];
    for (int i = 0; i < 200000; i++)
        vec[i] = i % 1000 + rank;
    MPI_Request cr;
    MPI_Iallreduce(vec, res, 200000, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &cr);
    for (int t = 0; t < 8; t++)
        MPI_Isend(&pout[t], 1, MPI_INT, right, t, MPI_COMM_WORLD, &p2p[8 + t]);
    int bsum = 0, one = 1;
    MPI_Allreduce(&one, &bsum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitall(16, p2p, MPI_STATUSES_IGNORE);
    MPI_Wait(&cr, MPI_STATUS_IGNORE);
    CHECK(bsum == size, "allreduce amid p2p: %d", bsum);
    for (int t = 0; t < 8; t++)
        CHECK(pin[t] == left * 100 + t, "p2p amid collectives tag %d: %d", t, pin[t]);
    int bad = 0;
    for (int i = 0; i < 200000; i++)
        bad += res[i] != size * (i % 1000) + size * (size - 1) / 2;
    CHECK(bad == 0, "large iallreduce amid p2p: %d wrong", bad);
    return finish();
}
