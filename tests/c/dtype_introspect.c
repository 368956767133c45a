/* Datatype introspection and the rest of issue 14 item 1's datatype calls: get_envelope /
 * get_contents for every constructor (derived argument types come back as new handles),
 * Type_match_size, Type_get_value_index, type keyvals and attributes (copied on dup, deleted
 * on free), Pack_external / Unpack_external ("external32": big-endian, MPI_LONG 4 bytes) and
 * Type_create_darray (block and cyclic), checked element by element. Types made by the `_c`
 * constructors with a count beyond INT_MAX report large counts (get_envelope_c/_contents_c,
 * MPI 4.1 section 5.1.13), and the int queries refuse them with MPI_ERR_TYPE. */
#include "coll_util.h"
#include <limits.h>

static void envelope(MPI_Datatype t, int ni, int na, int nd, int comb, const char *what) {
    int i, a, d, c;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    CHECK(i == ni && a == na && d == nd && c == comb, "%s: envelope %d %d %d %d, want %d %d %d %d",
          what, i, a, d, c, ni, na, nd, comb);
}

#define BIG ((MPI_Count)INT_MAX + 5)

static void envelope_c(MPI_Datatype t, MPI_Count ni, MPI_Count na, MPI_Count nl, MPI_Count nd,
                       int comb, const char *what) {
    MPI_Count i, a, l, d;
    int c;
    MPI_Type_get_envelope_c(t, &i, &a, &l, &d, &c);
    CHECK(i == ni && a == na && l == nl && d == nd && c == comb,
          "%s: envelope_c %lld %lld %lld %lld %d, want %lld %lld %lld %lld %d", what, (long long)i,
          (long long)a, (long long)l, (long long)d, c, (long long)ni, (long long)na,
          (long long)nl, (long long)nd, comb);
}

/* The large counts of `t` are `want[0..n)` and its one datatype argument is `old`. */
static void large_contents(MPI_Datatype t, int ni, const int *wi, int n, const MPI_Count *want,
                           int nd, const MPI_Datatype *old, const char *what) {
    int ints[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    MPI_Aint aints[1];
    MPI_Count large[8];
    MPI_Datatype types[2];
    MPI_Type_get_contents_c(t, 8, 1, 8, 2, ints, aints, large, types);
    for (int k = 0; k < ni; k++)
        CHECK(ints[k] == wi[k], "%s: integer %d is %d, want %d", what, k, ints[k], wi[k]);
    for (int k = 0; k < n; k++)
        CHECK(large[k] == want[k], "%s: large count %d is %lld, want %lld", what, k,
              (long long)large[k], (long long)want[k]);
    for (int k = 0; k < nd; k++)
        CHECK(types[k] == old[k], "%s: datatype %d differs", what, k);
    /* The int queries cannot describe it. */
    int i, a, d, c, cls;
    int rc = MPI_Type_get_envelope(t, &i, &a, &d, &c);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TYPE, "%s: MPI_Type_get_envelope gave %d (class %d)",
          what, rc, cls);
    int gi[16];
    MPI_Aint ga[16];
    MPI_Datatype gd[4];
    rc = MPI_Type_get_contents(t, 16, 16, 4, gi, ga, gd);
    MPI_Error_class(rc, &cls);
    CHECK(rc != MPI_SUCCESS && cls == MPI_ERR_TYPE, "%s: MPI_Type_get_contents gave %d (class %d)",
          what, rc, cls);
    /* Too small a large-count array is an error, not an overrun. */
    if (n > 0) {
        rc = MPI_Type_get_contents_c(t, 8, 1, n - 1, 2, ints, aints, large, types);
        CHECK(rc != MPI_SUCCESS, "%s: get_contents_c with %d large counts succeeded", what, n - 1);
    }
}

/* Needs MPI_ERRORS_RETURN on MPI_COMM_WORLD (the datatype calls' error handler). */
static void large_counts(void) {
    MPI_Datatype t, d;
    MPI_Datatype byte = MPI_BYTE, two[2] = {MPI_BYTE, MPI_INT};

    MPI_Type_contiguous_c(BIG, MPI_BYTE, &t);
    MPI_Count size;
    MPI_Type_size_c(t, &size);
    CHECK(size == BIG, "contiguous_c size %lld", (long long)size);
    envelope_c(t, 0, 0, 1, 1, MPI_COMBINER_CONTIGUOUS, "contiguous_c big");
    MPI_Count w1[] = {BIG};
    large_contents(t, 0, NULL, 1, w1, 1, &byte, "contiguous_c big");
    /* A dup has no counts of its own: the int queries describe it, and its argument is the
     * large type. */
    MPI_Type_dup(t, &d);
    envelope(d, 0, 0, 1, MPI_COMBINER_DUP, "dup of contiguous_c big");
    envelope_c(d, 0, 0, 0, 1, MPI_COMBINER_DUP, "dup of contiguous_c big");
    MPI_Type_free(&d);
    MPI_Type_free(&t);

    /* Counts that fit: as the int constructor's record. */
    MPI_Type_contiguous_c(5, MPI_INT, &t);
    envelope(t, 1, 0, 1, MPI_COMBINER_CONTIGUOUS, "contiguous_c small");
    envelope_c(t, 1, 0, 0, 1, MPI_COMBINER_CONTIGUOUS, "contiguous_c small");
    MPI_Type_free(&t);

    MPI_Type_vector_c(3, BIG, 2 * BIG, MPI_BYTE, &t);
    envelope_c(t, 0, 0, 3, 1, MPI_COMBINER_VECTOR, "vector_c");
    MPI_Count w2[] = {3, BIG, 2 * BIG};
    large_contents(t, 0, NULL, 3, w2, 1, &byte, "vector_c");
    MPI_Type_free(&t);

    MPI_Type_create_hvector_c(2, BIG, 3 * BIG, MPI_BYTE, &t);
    envelope_c(t, 0, 0, 3, 1, MPI_COMBINER_HVECTOR, "hvector_c");
    MPI_Count w3[] = {2, BIG, 3 * BIG};
    large_contents(t, 0, NULL, 3, w3, 1, &byte, "hvector_c");
    MPI_Type_free(&t);

    /* Only the stride is past INT_MAX: an address, which the int queries give. */
    MPI_Type_create_hvector_c(2, 3, 3 * BIG, MPI_BYTE, &t);
    envelope(t, 2, 1, 1, MPI_COMBINER_HVECTOR, "hvector_c far stride");
    envelope_c(t, 2, 1, 0, 1, MPI_COMBINER_HVECTOR, "hvector_c far stride");
    MPI_Type_free(&t);

    MPI_Count bl[2] = {BIG, 3}, disp[2] = {0, BIG + 8};
    MPI_Type_create_hindexed_c(2, bl, disp, MPI_BYTE, &t);
    envelope_c(t, 0, 0, 5, 1, MPI_COMBINER_HINDEXED, "hindexed_c");
    MPI_Count w4[] = {2, BIG, 3, 0, BIG + 8};
    large_contents(t, 0, NULL, 5, w4, 1, &byte, "hindexed_c");
    MPI_Type_free(&t);

    MPI_Type_indexed_c(2, bl, disp, MPI_BYTE, &t);
    envelope_c(t, 0, 0, 5, 1, MPI_COMBINER_INDEXED, "indexed_c");
    large_contents(t, 0, NULL, 5, w4, 1, &byte, "indexed_c");
    MPI_Type_free(&t);

    MPI_Type_create_struct_c(2, bl, disp, two, &t);
    envelope_c(t, 0, 0, 5, 2, MPI_COMBINER_STRUCT, "struct_c");
    large_contents(t, 0, NULL, 5, w4, 2, two, "struct_c");
    MPI_Type_free(&t);

    MPI_Count disp3[3] = {0, BIG, 2 * BIG};
    MPI_Type_create_indexed_block_c(3, 2, disp3, MPI_BYTE, &t);
    envelope_c(t, 0, 0, 5, 1, MPI_COMBINER_INDEXED_BLOCK, "indexed_block_c");
    MPI_Count w5[] = {3, 2, 0, BIG, 2 * BIG};
    large_contents(t, 0, NULL, 5, w5, 1, &byte, "indexed_block_c");
    MPI_Type_free(&t);

    /* ndims and order stay integers; sizes, subsizes and starts are large counts. */
    MPI_Count sizes[2] = {BIG, 4}, subs[2] = {2, 2}, starts[2] = {0, 1};
    MPI_Type_create_subarray_c(2, sizes, subs, starts, MPI_ORDER_C, MPI_BYTE, &t);
    envelope_c(t, 2, 0, 6, 1, MPI_COMBINER_SUBARRAY, "subarray_c");
    int wi6[] = {2, MPI_ORDER_C};
    MPI_Count w6[] = {BIG, 4, 2, 2, 0, 1};
    large_contents(t, 2, wi6, 6, w6, 1, &byte, "subarray_c");
    MPI_Type_free(&t);

    /* darray_c: only the global sizes are counts. */
    MPI_Count gs[1] = {BIG};
    int dist[1] = {MPI_DISTRIBUTE_NONE}, darg[1] = {MPI_DISTRIBUTE_DFLT_DARG}, ps[1] = {1};
    MPI_Type_create_darray_c(1, 0, 1, gs, dist, darg, ps, MPI_ORDER_C, MPI_BYTE, &t);
    envelope_c(t, 7, 0, 1, 1, MPI_COMBINER_DARRAY, "darray_c");
    int wi7[] = {1, 0, 1, MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_DFLT_DARG, 1, MPI_ORDER_C};
    large_contents(t, 7, wi7, 1, w1, 1, &byte, "darray_c");
    MPI_Type_free(&t);
}

static int copies, deletes;
static int copy_fn(MPI_Datatype t, int k, void *extra, void *in, void *out, int *flag) {
    (void)t; (void)k; (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}
static int delete_fn(MPI_Datatype t, int k, void *v, void *extra) {
    (void)t; (void)k; (void)v; (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int refuse(MPI_Datatype t, int k, void *v, void *extra) {
    (void)t; (void)k; (void)v; (void)extra;
    return MPI_ERR_OTHER;
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Datatype vec, idx, st, res, sub, dup;
    envelope(MPI_INT, 0, 0, 0, MPI_COMBINER_NAMED, "MPI_INT");
    MPI_Type_vector(3, 2, 5, MPI_INT, &vec);
    envelope(vec, 3, 0, 1, MPI_COMBINER_VECTOR, "vector");
    int ints[16];
    MPI_Aint addrs[8];
    MPI_Datatype types[4];
    MPI_Type_get_contents(vec, 16, 8, 4, ints, addrs, types);
    CHECK(ints[0] == 3 && ints[1] == 2 && ints[2] == 5 && types[0] == MPI_INT, "vector contents");
    int bl[3] = {1, 2, 3}, dp[3] = {0, 10, -4};
    MPI_Type_indexed(3, bl, dp, vec, &idx);
    envelope(idx, 7, 0, 1, MPI_COMBINER_INDEXED, "indexed");
    MPI_Type_get_contents(idx, 16, 8, 4, ints, addrs, types);
    CHECK(ints[0] == 3 && ints[3] == 3 && ints[6] == -4, "indexed contents");
    /* The vector comes back as a new handle of the same type. */
    int i2, a2, d2, c2;
    MPI_Type_get_envelope(types[0], &i2, &a2, &d2, &c2);
    CHECK(c2 == MPI_COMBINER_VECTOR, "indexed's old type combiner %d", c2);
    MPI_Type_free(&types[0]);
    MPI_Aint sd[2] = {0, 8};
    int sbl[2] = {1, 2};
    MPI_Datatype stys[2] = {MPI_DOUBLE, MPI_INT};
    MPI_Type_create_struct(2, sbl, sd, stys, &st);
    envelope(st, 3, 2, 2, MPI_COMBINER_STRUCT, "struct");
    MPI_Type_get_contents(st, 16, 8, 4, ints, addrs, types);
    CHECK(addrs[1] == 8 && types[0] == MPI_DOUBLE && types[1] == MPI_INT && ints[2] == 2,
          "struct contents");
    MPI_Type_create_resized(st, -8, 32, &res);
    envelope(res, 0, 2, 1, MPI_COMBINER_RESIZED, "resized");
    int sizes[2] = {4, 5}, subs[2] = {2, 3}, starts[2] = {1, 1};
    MPI_Type_create_subarray(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub);
    envelope(sub, 8, 0, 1, MPI_COMBINER_SUBARRAY, "subarray");
    MPI_Type_dup(sub, &dup);
    envelope(dup, 0, 0, 1, MPI_COMBINER_DUP, "dup");

    /* Match size and value-index. */
    MPI_Datatype m;
    int sz;
    MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &m);
    MPI_Type_size(m, &sz);
    CHECK(sz == 8, "match_size real 8 gave size %d", sz);
    MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 2, &m);
    MPI_Type_size(m, &sz);
    CHECK(sz == 2, "match_size integer 2 gave size %d", sz);
    MPI_Type_get_value_index(MPI_DOUBLE, MPI_INT, &m);
    CHECK(m == MPI_DOUBLE_INT, "value_index double,int");
    /* No predefined pair: MPI_DATATYPE_NULL (mpi4py's testGetValueIndex). */
    MPI_Type_get_value_index(MPI_INT, MPI_FLOAT, &m);
    CHECK(m == MPI_DATATYPE_NULL, "value_index int,float is not MPI_DATATYPE_NULL");

    /* Attributes: copied by dup through the callback, deleted on delete_attr and free. */
    int key;
    MPI_Type_create_keyval(copy_fn, delete_fn, &key, NULL);
    char base[4];
    MPI_Type_set_attr(vec, key, base);
    void *v;
    int flag;
    MPI_Type_get_attr(vec, key, &v, &flag);
    CHECK(flag && v == base, "get_attr on vec");
    MPI_Datatype vdup;
    MPI_Type_dup(vec, &vdup);
    MPI_Type_get_attr(vdup, key, &v, &flag);
    CHECK(flag && v == base + 1 && copies == 1, "dup's attribute %p copies %d", v, copies);
    MPI_Type_delete_attr(vec, key);
    MPI_Type_get_attr(vec, key, &v, &flag);
    CHECK(!flag && deletes == 1, "deleted attribute: flag %d deletes %d", flag, deletes);
    MPI_Type_free(&vdup);
    CHECK(deletes == 2, "free deleted %d", deletes);
    MPI_Type_set_attr(MPI_INT, key, base);
    MPI_Type_get_attr(MPI_INT, key, &v, &flag);
    CHECK(flag && v == base, "attribute on MPI_INT");
    MPI_Type_delete_attr(MPI_INT, key);
    MPI_Type_free_keyval(&key);
    CHECK(key == MPI_KEYVAL_INVALID, "free_keyval");
    /* A delete callback that fails: the attribute stays, and the error comes back. */
    int key2;
    MPI_Type_create_keyval(MPI_TYPE_DUP_FN, refuse, &key2, NULL);
    MPI_Type_set_attr(vec, key2, base);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Type_delete_attr(vec, key2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_get_attr(vec, key2, &v, &flag);
    CHECK(rc != MPI_SUCCESS && flag && v == base, "refused delete: rc %d flag %d", rc, flag);
    MPI_Type_free_keyval(&key2);

    /* external32: a struct {double; int, int} and MPI_LONG. */
    MPI_Type_commit(&st);
    struct { double d; int i[2]; } in[2] = {{1.0, {1, -2}}, {-2.5, {3, 4}}}, out[2];
    MPI_Aint esz, pos = 0;
    MPI_Pack_external_size("external32", 2, st, &esz);
    CHECK(esz == 32, "external32 size of the struct %ld", (long)esz);
    unsigned char buf[64];
    MPI_Pack_external("external32", in, 2, st, buf, sizeof buf, &pos);
    CHECK(pos == 32 && buf[0] == 0x3f && buf[1] == 0xf0 && buf[11] == 1 && buf[12] == 0xff &&
              buf[15] == 0xfe, "external32 struct bytes");
    memset(out, 0, sizeof out);
    pos = 0;
    MPI_Unpack_external("external32", buf, sizeof buf, &pos, out, 2, st);
    CHECK(pos == 32 && out[1].d == -2.5 && out[0].i[1] == -2 && out[1].i[0] == 3,
          "external32 struct round trip");
    long l[2] = {1, -2}, l2[2];
    pos = 0;
    MPI_Pack_external("external32", l, 2, MPI_LONG, buf, sizeof buf, &pos);
    CHECK(pos == 8 && buf[3] == 1 && buf[4] == 0xff, "external32 MPI_LONG is 4 bytes");
    pos = 0;
    MPI_Unpack_external("external32", buf, 8, &pos, l2, 2, MPI_LONG);
    CHECK(l2[0] == 1 && l2[1] == -2, "external32 long round trip");

    /* darray: a 6x7 int array over a 2x2 grid, rows block, columns cyclic(2); four ranks'
     * pieces must tile the array exactly once. */
    int g[2] = {6, 7}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC},
        darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
    int seen[42] = {0};
    for (int r = 0; r < 4; r++) {
        MPI_Datatype da;
        MPI_Type_create_darray(4, r, 2, g, dist, darg, ps, MPI_ORDER_C, MPI_INT, &da);
        MPI_Type_commit(&da);
        MPI_Aint lb, ext;
        MPI_Type_get_extent(da, &lb, &ext);
        CHECK(lb == 0 && ext == 42 * 4, "darray extent %ld", (long)ext);
        int arr[42], n;
        for (int k = 0; k < 42; k++)
            arr[k] = k;
        MPI_Type_size(da, &n);
        int packed[42], p = 0;
        MPI_Pack(arr, 1, da, packed, sizeof packed, &p, MPI_COMM_SELF);
        int pr = r / 2, pc = r % 2;
        for (int k = 0; k < n / 4; k++) {
            int e = packed[k], row = e / 7, col = e % 7;
            CHECK(row / 3 == pr && (col / 2) % 2 == pc, "darray rank %d got (%d,%d)", r, row, col);
            seen[e]++;
        }
        int de[4];
        MPI_Type_get_envelope(da, &de[0], &de[1], &de[2], &de[3]);
        CHECK(de[3] == MPI_COMBINER_DARRAY && de[0] == 4 * 2 + 4, "darray envelope");
        MPI_Type_free(&da);
    }
    for (int k = 0; k < 42; k++)
        CHECK(seen[k] == 1, "darray element %d owned %d times", k, seen[k]);

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    large_counts();
    rc = MPI_Type_free(&vec); /* the refusing callback fails the free */
    CHECK(rc != MPI_SUCCESS, "free with a refusing delete callback returned %d", rc);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Type_free(&idx);
    MPI_Type_free(&st);
    MPI_Type_free(&res);
    MPI_Type_free(&sub);
    MPI_Type_free(&dup);
    return finish();
}
