/* MPI_Comm_idup does not block: rank 0 calls it only after receiving from every other rank,
 * which send after their own idup; overlapping idups pending in opposite orders; an idup of an
 * intercommunicator; each new communicator is checked by an allreduce. */
#include "coll_util.h"

static void check_sum(MPI_Comm c, int mine, int want, const char *what) {
    int got = -1;
    MPI_Allreduce(&mine, &got, 1, MPI_INT, MPI_SUM, c);
    CHECK(got == want, "%s: allreduce %d, want %d", what, got, want);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Comm a, b, c1, c2;
    MPI_Request rq[2];
    int v;

    /* 1. rank 0 reaches the idup last; the others must not wait in theirs. */
    if (rank == 0) {
        for (int i = 1; i < size; i++) {
            MPI_Recv(&v, 1, MPI_INT, i, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(v == i, "recv %d from %d", v, i);
        }
        MPI_Comm_idup(MPI_COMM_WORLD, &a, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    } else {
        MPI_Comm_idup(MPI_COMM_WORLD, &a, &rq[0]);
        v = rank;
        MPI_Ssend(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
    }
    check_sum(a, rank, size * (size - 1) / 2, "idup of world");

    /* 2. two idups pending, started in opposite orders by even and odd ranks */
    MPI_Comm_dup(MPI_COMM_WORLD, &b);
    if (rank % 2 == 0) {
        MPI_Comm_idup(a, &c1, &rq[0]);
        MPI_Comm_idup(b, &c2, &rq[1]);
    } else {
        MPI_Comm_idup(b, &c2, &rq[0]);
        MPI_Comm_idup(a, &c1, &rq[1]);
    }
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    check_sum(c1, 1, size, "c1");
    check_sum(c2, rank + 1, size * (size + 1) / 2, "c2");
    /* distinct contexts: a message on c1 is not received on c2 */
    if (size > 1) {
        int x = 11, y = 22, r1 = 0, r2 = 0, next = (rank + 1) % size, prev = (rank + size - 1) % size;
        MPI_Request s[2];
        MPI_Isend(&x, 1, MPI_INT, next, 5, c1, &s[0]);
        MPI_Isend(&y, 1, MPI_INT, next, 5, c2, &s[1]);
        MPI_Recv(&r2, 1, MPI_INT, prev, 5, c2, MPI_STATUS_IGNORE);
        MPI_Recv(&r1, 1, MPI_INT, prev, 5, c1, MPI_STATUS_IGNORE);
        MPI_Waitall(2, s, MPI_STATUSES_IGNORE);
        CHECK(r1 == 11 && r2 == 22, "c1/c2 messages crossed: %d %d", r1, r2);
    }
    MPI_Comm_free(&c1);
    MPI_Comm_free(&c2);

    /* 3. idup of an intercommunicator (even | odd world ranks) */
    if (size > 1) {
        MPI_Comm local, ic, icd;
        MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &ic);
        MPI_Comm_idup(ic, &icd, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        int flag, rsize, sum = 0;
        MPI_Comm_test_inter(icd, &flag);
        MPI_Comm_remote_size(icd, &rsize);
        CHECK(flag && rsize == (rank % 2 ? (size + 1) / 2 : size / 2), "idup'd intercomm %d %d", flag, rsize);
        for (int w = 0; w < size; w++)
            if (w % 2 != rank % 2)
                sum += w;
        check_sum(icd, rank, sum, "idup of an intercomm");
        MPI_Comm_free(&icd);
        MPI_Comm_free(&ic);
        MPI_Comm_free(&local);
    }
    MPI_Comm_free(&b);
    MPI_Comm_free(&a);
    return finish();
}
