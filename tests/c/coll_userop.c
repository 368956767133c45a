/* User operations: a non-commutative one (2x2 matrix product; the result must be the
 * rank-ordered product) in Reduce, Allreduce, Scan, Exscan, Reduce_scatter_block and
 * their I- forms; a commutative user sum on a large vector; Op_commutative, Op_free. */
#include "coll_util.h"
#include <stdint.h>

#define P 251u
/* One element (MPI_INT, 4 bytes) is a 2x2 matrix of bytes mod P: [a b; c d]. */
typedef struct { uint8_t a, b, c, d; } mat;

static mat mul(mat x, mat y) {
    mat r;
    r.a = (uint8_t)((x.a * y.a + x.b * y.c) % P);
    r.b = (uint8_t)((x.a * y.b + x.b * y.d) % P);
    r.c = (uint8_t)((x.c * y.a + x.d * y.c) % P);
    r.d = (uint8_t)((x.c * y.b + x.d * y.d) % P);
    return r;
}

static int calls_in_order = 1;

/* inout = in * inout: `in` holds the lower ranks. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt) {
    mat *a = in, *b = inout;
    if (*dt != MPI_INT)
        calls_in_order = 0;
    for (int i = 0; i < *len; i++)
        b[i] = mul(a[i], b[i]);
}

static void usersum(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    long *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] += a[i];
}

static mat elem(int r, int i) {
    mat m = {(uint8_t)(r + 2), (uint8_t)(i % 7 + 1), (uint8_t)(r % 3), 1};
    return m;
}

static mat prod(int from, int to, int i) { /* elem(from) * ... * elem(to - 1) */
    mat m = {1, 0, 0, 1};
    for (int r = from; r < to; r++)
        m = mul(m, elem(r, i));
    return m;
}

static int eq(mat x, mat y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Op op, sum;
    MPI_Op_create(matmul, 0, &op);
    MPI_Op_create(usersum, 1, &sum);
    int commute = -1;
    MPI_Op_commutative(op, &commute);
    CHECK(commute == 0, "matmul commutative=%d", commute);
    MPI_Op_commutative(sum, &commute);
    CHECK(commute == 1, "usersum commutative=%d", commute);
    MPI_Op_commutative(MPI_SUM, &commute);
    CHECK(commute == 1, "MPI_SUM commutative=%d", commute);

    int ns[] = {1, 5, 70000}; /* 70000 matrices: past the large-message threshold */
    for (int k = 0; k < 3; k++) {
        int n = ns[k];
        mat *in = xmalloc(n * sizeof(mat)), *out = xmalloc(n * sizeof(mat));
        for (int i = 0; i < n; i++)
            in[i] = elem(rank, i);
        for (int root = 0; root < size; root += (size > 2 ? size - 1 : 1)) {
            MPI_Reduce(in, out, n, MPI_INT, op, root, MPI_COMM_WORLD);
            if (rank == root) {
                int bad = 0;
                for (int i = 0; i < n; i++)
                    bad += !eq(out[i], prod(0, size, i));
                CHECK(bad == 0, "noncommutative reduce n=%d root=%d: %d wrong", n, root, bad);
            }
        }
        MPI_Allreduce(in, out, n, MPI_INT, op, MPI_COMM_WORLD);
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += !eq(out[i], prod(0, size, i));
        CHECK(bad == 0, "noncommutative allreduce n=%d: %d wrong", n, bad);
        MPI_Request req;
        MPI_Iscan(in, out, n, MPI_INT, op, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        bad = 0;
        for (int i = 0; i < n; i++)
            bad += !eq(out[i], prod(0, rank + 1, i));
        CHECK(bad == 0, "noncommutative scan n=%d: %d wrong", n, bad);
        MPI_Exscan(in, out, n, MPI_INT, op, MPI_COMM_WORLD);
        bad = 0;
        for (int i = 0; i < n && rank > 0; i++)
            bad += !eq(out[i], prod(0, rank, i));
        CHECK(bad == 0, "noncommutative exscan n=%d: %d wrong", n, bad);
        free(in);
        free(out);
    }
    /* Reduce_scatter_block, non-commutative: block r of the ordered product. */
    int per = 3;
    mat *in = xmalloc(per * size * sizeof(mat)), out[3];
    for (int i = 0; i < per * size; i++)
        in[i] = elem(rank, i);
    MPI_Request req;
    MPI_Ireduce_scatter_block(in, out, per, MPI_INT, op, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < per; i++)
        CHECK(eq(out[i], prod(0, size, rank * per + i)), "noncommutative reduce_scatter_block %d", i);
    free(in);

    /* Commutative user sum on 2 MiB of longs (ring algorithms), and in Reduce_local. */
    int n = 262144;
    long *v = xmalloc(n * sizeof(long)), *w = xmalloc(n * sizeof(long));
    for (int i = 0; i < n; i++)
        v[i] = rank + i;
    MPI_Allreduce(v, w, n, MPI_LONG, sum, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += w[i] != (long)size * (size - 1) / 2 + (long)size * i;
    CHECK(bad == 0, "user sum allreduce: %d wrong", bad);
    MPI_Reduce_local(v, w, 1, MPI_LONG, sum);
    CHECK(w[0] == (long)size * (size - 1) / 2 + rank, "reduce_local user op");
    free(v);
    free(w);
    CHECK(calls_in_order, "user function got the wrong datatype");

    MPI_Op_free(&op);
    MPI_Op_free(&sum);
    CHECK(op == MPI_OP_NULL && sum == MPI_OP_NULL, "Op_free did not reset the handle");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Op sumop = MPI_SUM;
    int cls = 0, rc = MPI_Op_free(&sumop);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "freeing MPI_SUM gave class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return finish();
}
