/* MPI_Reduce / MPI_Ireduce / MPI_Reduce_local: every root, predefined ops on their types,
 * MINLOC/MAXLOC pairs, MPI_IN_PLACE, zero counts, a large vector (ring path), MPI_ERR_OP. */
#include "coll_util.h"
#include <complex.h>
#include <stdbool.h>

static void check_int_ops(int root, int n) {
    int *in = xmalloc(n * sizeof(int)), *out = xmalloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        in[i] = rank + i;
    MPI_Reduce(in, out, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    if (rank == root) {
        int bad = 0;
        for (int i = 0; i < n; i++)
            bad += out[i] != size * (size - 1) / 2 + size * i;
        CHECK(bad == 0, "int sum n=%d root=%d: %d wrong", n, root, bad);
    }
    MPI_Reduce(in, out, n, MPI_INT, MPI_MAX, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int i = 0; i < n; i++)
            CHECK(out[i] == size - 1 + i, "int max [%d]=%d", i, out[i]);
    MPI_Reduce(in, out, n, MPI_INT, MPI_MIN, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int i = 0; i < n; i++)
            CHECK(out[i] == i, "int min [%d]=%d", i, out[i]);
    /* In place at the root. */
    for (int i = 0; i < n; i++)
        out[i] = in[i] = rank + i;
    if (rank == root)
        MPI_Reduce(MPI_IN_PLACE, out, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    else
        MPI_Reduce(in, NULL, n, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD);
    if (rank == root)
        for (int i = 0; i < n; i++)
            CHECK(out[i] == size * (size - 1) / 2 + size * i, "in-place sum [%d]=%d", i, out[i]);
    free(in);
    free(out);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    for (int root = 0; root < size; root++) {
        check_int_ops(root, 1);
        check_int_ops(root, 17);
    }
    check_int_ops(0, 0);
    check_int_ops(size / 2, 300000); /* 1.2 MB: ring reduce-scatter + gather */

    /* Products, logical and bitwise ops, several widths. */
    long long lp = rank % 3 + 1, lpr = 0, expect_p = 1;
    for (int r = 0; r < size; r++)
        expect_p *= r % 3 + 1;
    MPI_Reduce(&lp, &lpr, 1, MPI_LONG_LONG, MPI_PROD, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(lpr == expect_p, "long long prod %lld != %lld", lpr, expect_p);
    bool b_and = rank != 1, b_or = rank == size - 1, rb = 0;
    MPI_Reduce(&b_and, &rb, 1, MPI_C_BOOL, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rb == (size < 2), "bool land %d", rb);
    MPI_Reduce(&b_or, &rb, 1, MPI_C_BOOL, MPI_LOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rb == 1, "bool lor %d", rb);
    int lx = 1, rlx = -1;
    MPI_Reduce(&lx, &rlx, 1, MPI_INT, MPI_LXOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rlx == (size % 2), "int lxor %d", rlx);
    unsigned char by = (unsigned char)(1u << (rank % 8)), rby = 0, eby = 0;
    for (int r = 0; r < size; r++)
        eby |= (unsigned char)(1u << (r % 8));
    MPI_Reduce(&by, &rby, 1, MPI_BYTE, MPI_BOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rby == eby, "byte bor %x != %x", rby, eby);
    unsigned short us = 0xffff, rus = 0;
    MPI_Reduce(&us, &rus, 1, MPI_UNSIGNED_SHORT, MPI_BAND, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rus == 0xffff, "ushort band %x", rus);
    uint64_t ux = (uint64_t)rank << 40, rux = 0, eux = 0;
    for (int r = 0; r < size; r++)
        eux ^= (uint64_t)r << 40;
    MPI_Reduce(&ux, &rux, 1, MPI_UINT64_T, MPI_BXOR, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rux == eux, "uint64 bxor");
    float f = rank + 0.5f, rf = 0;
    MPI_Reduce(&f, &rf, 1, MPI_FLOAT, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rf == size - 0.5f, "float max %g", rf);
    double complex z = rank + 1.0 * I, rz = 0;
    MPI_Reduce(&z, &rz, 1, MPI_C_DOUBLE_COMPLEX, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(creal(rz) == size * (size - 1) / 2.0 && cimag(rz) == size, "complex sum");
    double complex zi = I, rzi = 0, ezi = 1;
    for (int r = 0; r < size; r++)
        ezi *= I;
    MPI_Reduce(&zi, &rzi, 1, MPI_C_DOUBLE_COMPLEX, MPI_PROD, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(rzi == ezi, "complex prod (%g,%g)", creal(rzi), cimag(rzi));

    /* MINLOC / MAXLOC on pair types; ties take the lower index. */
    struct { double v; int i; } dv[2], dr[2];
    dv[0].v = (rank % 2) ? 1.0 : 2.0; dv[0].i = rank;
    dv[1].v = -rank; dv[1].i = rank;
    MPI_Reduce(dv, dr, 2, MPI_DOUBLE_INT, MPI_MINLOC, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK(dr[0].v == (size > 1 ? 1.0 : 2.0) && dr[0].i == (size > 1 ? 1 : 0), "minloc tie (%g,%d)", dr[0].v, dr[0].i);
        CHECK(dr[1].v == -(size - 1) && dr[1].i == size - 1, "minloc (%g,%d)", dr[1].v, dr[1].i);
    }
    int iv[2] = {rank / 2, rank}, ir[2];
    MPI_Reduce(iv, ir, 1, MPI_2INT, MPI_MAXLOC, 0, MPI_COMM_WORLD);
    if (rank == 0)
        CHECK(ir[0] == (size - 1) / 2 && ir[1] == ((size - 1) / 2) * 2, "2int maxloc (%d,%d)", ir[0], ir[1]);
    struct { float v; int i; } fv = {(float)(rank * 7 % 5), rank}, fr;
    MPI_Allreduce(&fv, &fr, 1, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    float best = -1; int bi = 0;
    for (int r = 0; r < size; r++)
        if ((float)(r * 7 % 5) > best) { best = (float)(r * 7 % 5); bi = r; }
    CHECK(fr.v == best && fr.i == bi, "float_int maxloc (%g,%d) != (%g,%d)", fr.v, fr.i, best, bi);
    struct { long v; int i; } lv = {rank == 0 ? 5 : -rank, rank}, lr;
    MPI_Allreduce(&lv, &lr, 1, MPI_LONG_INT, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(lr.v == (size > 1 ? -(size - 1) : 5) && lr.i == size - 1, "long_int minloc");
    struct { short v; int i; } sv = {1, size - rank}, sr;
    MPI_Allreduce(&sv, &sr, 1, MPI_SHORT_INT, MPI_MINLOC, MPI_COMM_WORLD);
    CHECK(sr.v == 1 && sr.i == 1, "short_int minloc tie (%d,%d)", sr.v, sr.i);

    /* Non-blocking. */
    int nin[3] = {rank, 2 * rank, 1}, nout[3] = {0, 0, 0};
    MPI_Request req;
    MPI_Ireduce(nin, nout, 3, MPI_INT, MPI_SUM, size - 1, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank == size - 1)
        CHECK(nout[0] == size * (size - 1) / 2 && nout[1] == size * (size - 1) && nout[2] == size, "ireduce");

    /* Reduce_local. */
    int a[4] = {1, 2, 3, 4}, bb[4] = {10, 20, 30, 40};
    MPI_Reduce_local(a, bb, 4, MPI_INT, MPI_SUM);
    CHECK(bb[0] == 11 && bb[3] == 44, "reduce_local sum");
    double da[2] = {1, 5}, db[2] = {3, 2};
    MPI_Reduce_local(da, db, 2, MPI_DOUBLE, MPI_MIN);
    CHECK(db[0] == 1 && db[1] == 2, "reduce_local min");

    /* Invalid op/type pairs are MPI_ERR_OP; a bad op handle too. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    double x = 1, y = 0;
    int cls = 0, rc = MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_BAND, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "double band gave class %d", cls);
    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_MAXLOC, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "double maxloc gave class %d", cls);
    rc = MPI_Reduce_local(&x, &y, 1, MPI_DOUBLE, MPI_LXOR);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "reduce_local double lxor gave class %d", cls);
    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OP, "MPI_OP_NULL gave class %d", cls);
    /* MPI_IN_PLACE where it is not allowed, and overlapping Reduce_local buffers. */
    rc = MPI_Allreduce(&x, MPI_IN_PLACE, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "allreduce into MPI_IN_PLACE gave class %d", cls);
    rc = MPI_Reduce_local(a, a, 4, MPI_INT, MPI_SUM);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "reduce_local on one buffer gave class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return finish();
}
