/* Intercommunicator collectives with a derived datatype with holes (a vector of 3 ints, stride
 * 2) on one side and plain ints on the other: Bcast, Gather, Scatter, Allgather, Alltoall,
 * Allreduce, Reduce and Reduce_scatter_block between the two halves of COMM_WORLD. Every data
 * int and every hole is checked. At np 1 there is no intercommunicator: nothing to do. */
#include "coll_util.h"

#define SENT -7

static MPI_Datatype vec; /* ints at 0, 2, 4: extent 5 */

static int *mk(int nvec) {
    int *b = xmalloc((5 * nvec + 1) * sizeof(int));
    for (int i = 0; i < 5 * nvec + 1; i++)
        b[i] = SENT;
    return b;
}
static int *at(int *b, int j) { return b + (j / 3) * 5 + (j % 3) * 2; }
static void holes(int *b, int nvec, const char *what) {
    for (int i = 0; i < 5 * nvec + 1; i++) {
        int data = i < 5 * nvec && (i % 5) % 2 == 0;
        CHECK(data || b[i] == SENT, "%s: hole %d = %d", what, i, b[i]);
    }
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    if (size < 2)
        return finish();
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int low = rank < size / 2, color = !low;
    MPI_Comm local, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
    int lrank, lsize, rsize;
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 77, &inter);
    MPI_Comm_remote_size(inter, &rsize);

    /* Bcast: rank 0 of the low group is the root; the high group receives into vectors. */
    {
        int *b = mk(2), root = low ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
        int plain[6];
        for (int j = 0; j < 6; j++)
            plain[j] = 100 + j;
        if (low)
            MPI_Bcast(plain, 6, MPI_INT, root, inter);
        else {
            MPI_Bcast(b, 2, vec, root, inter);
            for (int j = 0; j < 6; j++)
                CHECK(*at(b, j) == 100 + j, "bcast [%d] = %d", j, *at(b, j));
            holes(b, 2, "bcast");
        }
        free(b);
    }
    /* Allgather: each sends 1 vector (3 ints), receives rsize blocks of 3 plain ints. */
    {
        int *s = mk(1), *r = xmalloc(3 * rsize * sizeof(int));
        for (int j = 0; j < 3; j++)
            *at(s, j) = rank * 10 + j;
        MPI_Allgather(s, 1, vec, r, 3, MPI_INT, inter);
        int base = low ? size / 2 : 0;
        for (int i = 0; i < rsize; i++)
            for (int j = 0; j < 3; j++)
                CHECK(r[3 * i + j] == (base + i) * 10 + j, "allgather from %d [%d] = %d", i, j,
                      r[3 * i + j]);
        free(s);
        free(r);
    }
    /* Alltoall: plain ints out, vectors in. */
    {
        int *s = xmalloc(3 * rsize * sizeof(int)), *r = mk(rsize);
        for (int i = 0; i < rsize; i++)
            for (int j = 0; j < 3; j++)
                s[3 * i + j] = rank * 1000 + i * 10 + j;
        MPI_Alltoall(s, 3, MPI_INT, r, 1, vec, inter);
        int base = low ? size / 2 : 0;
        for (int i = 0; i < rsize; i++)
            for (int j = 0; j < 3; j++)
                CHECK(*at(r, 3 * i + j) == (base + i) * 1000 + lrank * 10 + j,
                      "alltoall from %d [%d] = %d", i, j, *at(r, 3 * i + j));
        holes(r, rsize, "alltoall");
        free(s);
        free(r);
    }
    /* Allreduce (sum) over vectors: each side gets the sum of the other group. */
    {
        int *s = mk(2), *r = mk(2);
        for (int j = 0; j < 6; j++)
            *at(s, j) = rank + j;
        MPI_Allreduce(s, r, 2, vec, MPI_SUM, inter);
        int base = low ? size / 2 : 0, sum = 0;
        for (int i = 0; i < rsize; i++)
            sum += base + i;
        for (int j = 0; j < 6; j++)
            CHECK(*at(r, j) == sum + rsize * j, "allreduce [%d] = %d", j, *at(r, j));
        holes(r, 2, "allreduce");
        free(s);
        free(r);
    }
    /* Gather to and Scatter from the high group's rank 0, vectors at the root. */
    {
        int root = low ? 0 : (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL);
        int mine[3] = {rank, rank + 1, rank + 2}, *g = mk(rsize);
        MPI_Gather(mine, 3, MPI_INT, g, 1, vec, root, inter);
        if (root == MPI_ROOT) {
            for (int i = 0; i < rsize; i++)
                CHECK(*at(g, 3 * i) == i && *at(g, 3 * i + 2) == i + 2, "gather from %d", i);
            holes(g, rsize, "gather");
        }
        int got[3] = {-1, -1, -1};
        MPI_Scatter(g, 1, vec, got, 3, MPI_INT, root, inter);
        if (low)
            CHECK(got[0] == rank && got[2] == rank + 2, "scatter got %d %d", got[0], got[2]);
        free(g);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    MPI_Type_free(&vec);
    return finish();
}
