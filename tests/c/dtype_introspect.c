/* Datatype introspection and the rest of issue 14 item 1's datatype calls: get_envelope /
 * get_contents for every constructor (derived argument types come back as new handles),
 * Type_match_size, Type_get_value_index, type keyvals and attributes (copied on dup, deleted
 * on free), Pack_external / Unpack_external ("external32": big-endian, MPI_LONG 4 bytes) and
 * Type_create_darray (block and cyclic), checked element by element. */
#include "coll_util.h"

static void envelope(MPI_Datatype t, int ni, int na, int nd, int comb, const char *what) {
    int i, a, d, c;
    MPI_Type_get_envelope(t, &i, &a, &d, &c);
    CHECK(i == ni && a == na && d == nd && c == comb, "%s: envelope %d %d %d %d, want %d %d %d %d",
          what, i, a, d, c, ni, na, nd, comb);
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
