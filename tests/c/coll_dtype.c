/* Collectives with derived datatypes. Contiguous ones (Type_contiguous, a struct without
 * holes, a dup) work in Bcast, Gather(v), Allgather, Alltoall, Scatter and in reductions with a
 * user op (which sees the derived handle). Uncommitted types are refused with MPI_ERR_TYPE
 * (nothing moved, no hang); types with holes are tested in coll_derived.c. */
#include "coll_util.h"

static MPI_Datatype t3;

/* inout += in over 3 * len ints; the datatype passed must be t3. */
static void add3(void *in, void *inout, int *len, MPI_Datatype *dt) {
    if (*dt != t3) {
        errs++;
        return;
    }
    int *a = in, *b = inout;
    for (int i = 0; i < 3 * *len; i++)
        b[i] += a[i];
}

static int cls_of(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Type_contiguous(3, MPI_INT, &t3);
    MPI_Type_commit(&t3);

    /* Bcast of 4 elements of t3 (12 ints), every root. */
    for (int root = 0; root < size; root++) {
        int b[12];
        for (int i = 0; i < 12; i++)
            b[i] = rank == root ? root * 100 + i : -1;
        MPI_Bcast(b, 4, t3, root, MPI_COMM_WORLD);
        for (int i = 0; i < 12; i++)
            CHECK(b[i] == root * 100 + i, "bcast t3 root %d [%d] = %d", root, i, b[i]);
    }

    /* Gather one t3 from everyone; recv side as 3 MPI_INTs (type signatures match). */
    int mine[3] = {rank, rank * 2, rank * 3};
    int *g = xmalloc(3 * size * sizeof(int));
    for (int i = 0; i < 3 * size; i++)
        g[i] = -1;
    MPI_Gather(mine, 1, t3, g, 3, MPI_INT, size - 1, MPI_COMM_WORLD);
    if (rank == size - 1)
        for (int i = 0; i < size; i++)
            CHECK(g[3 * i] == i && g[3 * i + 1] == 2 * i && g[3 * i + 2] == 3 * i,
                  "gather t3 from %d: %d %d %d", i, g[3 * i], g[3 * i + 1], g[3 * i + 2]);

    /* Allgather and Alltoall in t3 units; Gatherv with displacements in t3 extents. */
    for (int i = 0; i < 3 * size; i++)
        g[i] = -1;
    MPI_Allgather(mine, 1, t3, g, 1, t3, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        CHECK(g[3 * i + 2] == 3 * i, "allgather t3 from %d: %d", i, g[3 * i + 2]);
    int *a2a = xmalloc(3 * size * sizeof(int)), *r2a = xmalloc(3 * size * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < 3; k++) {
            a2a[3 * j + k] = rank * 100 + j * 10 + k;
            r2a[3 * j + k] = -1;
        }
    MPI_Alltoall(a2a, 1, t3, r2a, 1, t3, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < 3; k++)
            CHECK(r2a[3 * i + k] == i * 100 + rank * 10 + k, "alltoall t3 from %d[%d] = %d", i,
                  k, r2a[3 * i + k]);
    int *cnt = xmalloc(size * sizeof(int)), *dsp = xmalloc(size * sizeof(int));
    for (int i = 0; i < size; i++) {
        cnt[i] = 1;
        dsp[i] = size - 1 - i; /* reversed order, in units of t3's extent */
    }
    for (int i = 0; i < 3 * size; i++)
        g[i] = -1;
    MPI_Gatherv(mine, 1, t3, g, cnt, dsp, t3, 0, MPI_COMM_WORLD);
    if (rank == 0)
        for (int i = 0; i < size; i++)
            CHECK(g[3 * (size - 1 - i)] == i, "gatherv t3 from %d: %d", i, g[3 * (size - 1 - i)]);

    /* A struct of two ints without holes, a dup of it, in Scatter. */
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, sizeof(int)};
    MPI_Datatype tys[2] = {MPI_INT, MPI_INT}, pair, pairdup;
    MPI_Type_create_struct(2, bl, disp, tys, &pair);
    MPI_Type_commit(&pair);
    MPI_Type_dup(pair, &pairdup);
    int *sc = xmalloc(2 * size * sizeof(int)), got[2] = {-1, -1};
    for (int i = 0; i < 2 * size; i++)
        sc[i] = 7 * i;
    MPI_Scatter(sc, 1, pairdup, got, 1, pair, 0, MPI_COMM_WORLD);
    CHECK(got[0] == 14 * rank && got[1] == 14 * rank + 7, "scatter pair: %d %d", got[0], got[1]);

    /* Reductions on t3 with a user op. */
    MPI_Op op;
    MPI_Op_create(add3, 1, &op);
    int red[6] = {-1, -1, -1, -1, -1, -1}, in6[6];
    for (int i = 0; i < 6; i++)
        in6[i] = rank + i;
    MPI_Allreduce(in6, red, 2, t3, op, MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++)
        CHECK(red[i] == size * (size - 1) / 2 + size * i, "allreduce t3 [%d] = %d", i, red[i]);
    MPI_Request rq;
    MPI_Iallreduce(MPI_IN_PLACE, in6, 2, t3, op, MPI_COMM_WORLD, &rq);
    MPI_Wait(&rq, MPI_STATUS_IGNORE);
    CHECK(in6[5] == size * (size - 1) / 2 + size * 5, "iallreduce in place t3 = %d", in6[5]);
    MPI_Op_free(&op);

    /* Refusals: every rank passes the same type, so every rank gets MPI_ERR_TYPE. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype vec, shifted, wide, uncommitted;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec); /* a hole between its ints */
    MPI_Type_commit(&vec);
    MPI_Type_create_resized(MPI_INT, -4, 4, &shifted); /* lb -4 */
    MPI_Type_commit(&shifted);
    MPI_Type_create_resized(MPI_INT, 0, 8, &wide); /* extent 8, size 4 */
    MPI_Type_commit(&wide);
    MPI_Type_contiguous(2, MPI_INT, &uncommitted);
    int v[8] = {1, 2, 3, 4, 5, 6, 7, 8}, v2[8];
    MPI_Datatype bad[1] = {uncommitted};
    const char *names[1] = {"uncommitted"};
    for (int k = 0; k < 1; k++) {
        int rc = MPI_Bcast(v, 2, bad[k], 0, MPI_COMM_WORLD);
        CHECK(cls_of(rc) == MPI_ERR_TYPE, "bcast %s gave class %d", names[k], cls_of(rc));
        rc = MPI_Gather(v, 1, bad[k], v2, 1, bad[k], 0, MPI_COMM_WORLD);
        CHECK(cls_of(rc) == MPI_ERR_TYPE, "gather %s gave class %d", names[k], cls_of(rc));
        rc = MPI_Allgather(v, 1, bad[k], v2, 1, bad[k], MPI_COMM_WORLD);
        CHECK(cls_of(rc) == MPI_ERR_TYPE, "allgather %s gave class %d", names[k], cls_of(rc));
        rc = MPI_Allreduce(v, v2, 1, bad[k], MPI_SUM, MPI_COMM_WORLD);
        CHECK(cls_of(rc) == MPI_ERR_TYPE, "allreduce %s gave class %d", names[k], cls_of(rc));
        MPI_Request r = MPI_REQUEST_NULL;
        rc = MPI_Ibcast(v, 2, bad[k], 0, MPI_COMM_WORLD, &r);
        CHECK(cls_of(rc) == MPI_ERR_TYPE, "ibcast %s gave class %d", names[k], cls_of(rc));
    }
    for (int i = 0; i < 8; i++)
        CHECK(v[i] == i + 1, "refused bcast changed v[%d] to %d", i, v[i]);
    /* Still in step afterwards. */
    int s = 0;
    MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(s == size * (size - 1) / 2, "allreduce after refusals %d", s);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    MPI_Type_free(&vec);
    MPI_Type_free(&shifted);
    MPI_Type_free(&wide);
    MPI_Type_free(&uncommitted);
    MPI_Type_free(&pairdup);
    MPI_Type_free(&pair);
    MPI_Type_free(&t3);
    free(g); free(a2a); free(r2a); free(cnt); free(dsp); free(sc);
    return finish();
}
