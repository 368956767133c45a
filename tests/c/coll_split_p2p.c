/* Collectives on a split communicator while point-to-point traffic runs on the parent:
 * WORLD is split by parity; every iteration posts ring Isend/Irecv on WORLD (some messages
 * large enough for rendezvous) plus a wildcard (ANY_SOURCE, ANY_TAG) receive, runs Allreduce,
 * Bcast, Allgather and an Iallreduce on the split communicator while they are pending, and only
 * then completes the WORLD traffic. Collective traffic must never match the WORLD receives. */
#include "coll_util.h"

#define ITERS 40
#define SMALL 64
#define LARGE 50000 /* 200 KB of ints: rendezvous */

int main(int argc, char **argv) {
    start(&argc, &argv);
    int color = rank % 2;
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &sub);
    int srank, ssize;
    MPI_Comm_rank(sub, &srank);
    MPI_Comm_size(sub, &ssize);
    CHECK(srank == rank / 2, "sub rank %d for world %d", srank, rank);

    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int *sbuf = xmalloc(LARGE * sizeof(int)), *rbuf = xmalloc(LARGE * sizeof(int));
    int *gath = xmalloc(ssize * sizeof(int));
    for (int it = 0; it < ITERS; it++) {
        int n = it % 10 == 0 ? LARGE : SMALL;
        for (int j = 0; j < n; j++) {
            sbuf[j] = rank * 100000 + it * 100 + j % 100;
            rbuf[j] = -1;
        }
        MPI_Request req[4];
        int wild = -1, wsend = rank * 1000 + it;
        /* The specific receive first, so the ring message cannot land in the wildcard one. */
        MPI_Irecv(rbuf, n, MPI_INT, prev, it, MPI_COMM_WORLD, &req[0]);
        MPI_Irecv(&wild, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req[1]);
        MPI_Isend(sbuf, n, MPI_INT, next, it, MPI_COMM_WORLD, &req[2]);

        /* Collectives on the split communicator while WORLD traffic is pending. */
        int mine = rank + it, sum = 0, expect = 0;
        for (int r = color; r < size; r += 2)
            expect += r + it;
        MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, sub);
        CHECK(sum == expect, "it %d: allreduce %d, expected %d", it, sum, expect);

        int root = it % ssize, b = srank == root ? it * 7 + color : -1;
        MPI_Bcast(&b, 1, MPI_INT, root, sub);
        CHECK(b == it * 7 + color, "it %d: bcast %d", it, b);

        for (int i = 0; i < ssize; i++)
            gath[i] = -1;
        MPI_Allgather(&rank, 1, MPI_INT, gath, 1, MPI_INT, sub);
        for (int i = 0; i < ssize; i++)
            CHECK(gath[i] == color + 2 * i, "it %d: allgather[%d] = %d", it, i, gath[i]);

        int isum = 0;
        MPI_Request creq;
        MPI_Iallreduce(&mine, &isum, 1, MPI_INT, MPI_SUM, sub, &creq);
        /* The wildcard message goes out only now: the wildcard receive was pending throughout. */
        MPI_Isend(&wsend, 1, MPI_INT, next, 30000 + it, MPI_COMM_WORLD, &req[3]);
        MPI_Wait(&creq, MPI_STATUS_IGNORE);
        CHECK(isum == expect, "it %d: iallreduce %d, expected %d", it, isum, expect);

        MPI_Status st[4];
        MPI_Waitall(4, req, st);
        int bad = 0;
        for (int j = 0; j < n; j++)
            bad += rbuf[j] != prev * 100000 + it * 100 + j % 100;
        CHECK(bad == 0, "it %d: ring message from %d has %d wrong ints", it, prev, bad);
        CHECK(st[0].MPI_SOURCE == prev && st[0].MPI_TAG == it, "it %d: ring status %d/%d", it,
              st[0].MPI_SOURCE, st[0].MPI_TAG);
        CHECK(wild == prev * 1000 + it, "it %d: wildcard got %d", it, wild);
        CHECK(st[1].MPI_SOURCE == prev && st[1].MPI_TAG == 30000 + it,
              "it %d: wildcard status %d/%d", it, st[1].MPI_SOURCE, st[1].MPI_TAG);
    }
    free(sbuf);
    free(rbuf);
    free(gath);
    MPI_Comm_free(&sub);
    return finish();
}
