/* Info objects: every MPI_Info_* call, ordered keys, the length limits and error classes,
 * MPI_INFO_NULL / freed / predefined handles, MPI_INFO_ENV and MPI_Info_create_env, use before
 * MPI_Init and after MPI_Finalize, Comm_set_info / Comm_get_info and the calls taking an info
 * (Comm_dup_with_info, Comm_idup_with_info, Comm_split_type, Alloc_mem). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0, rank = -1, size;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static int class_of(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

/* The value of key in info, "" (flag 0) when absent. */
static const char *value_of(MPI_Info info, const char *key) {
    static char buf[MPI_MAX_INFO_VAL];
    int flag = -1, buflen = MPI_MAX_INFO_VAL;
    buf[0] = 0;
    MPI_Info_get_string(info, key, &buflen, buf, &flag);
    return flag ? buf : "";
}

static int nkeys(MPI_Info info) {
    int n = -1;
    MPI_Info_get_nkeys(info, &n);
    return n;
}

static void comm_hints(void) {
    MPI_Comm a, b, c, d;
    MPI_Info in, out;
    MPI_Request req;
    void *mem;
    int rc;

    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_get_info(a, &out);
    CHECK(nkeys(out) == 0, "a new communicator has %d hints", nkeys(out));
    MPI_Info_free(&out);

    MPI_Info_create(&in);
    MPI_Info_set(in, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(in, "rmpi_test_hint", "one");
    CHECK(MPI_Comm_set_info(a, in) == MPI_SUCCESS, "Comm_set_info");
    MPI_Info_free(&in);
    MPI_Comm_get_info(a, &out);
    CHECK(nkeys(out) == 2, "%d hints after set_info", nkeys(out));
    CHECK(!strcmp(value_of(out, "mpi_assert_no_any_tag"), "true"), "assert hint kept");
    CHECK(!strcmp(value_of(out, "rmpi_test_hint"), "one"), "user hint kept");
    MPI_Info_free(&out);

    /* A second set_info adds and replaces; hints it does not name stay. */
    MPI_Info_create(&in);
    MPI_Info_set(in, "rmpi_test_hint", "two");
    MPI_Info_set(in, "mpi_assert_exact_length", "false");
    MPI_Comm_set_info(a, in);
    MPI_Info_free(&in);
    MPI_Comm_get_info(a, &out);
    CHECK(nkeys(out) == 3, "%d hints after the second set_info", nkeys(out));
    CHECK(!strcmp(value_of(out, "rmpi_test_hint"), "two"), "hint replaced");
    MPI_Info_free(&out);

    /* MPI_Comm_dup keeps the hints; dup_with_info takes the info's instead. */
    MPI_Comm_dup(a, &b);
    MPI_Comm_get_info(b, &out);
    CHECK(nkeys(out) == 3 && !strcmp(value_of(out, "rmpi_test_hint"), "two"), "dup keeps hints");
    MPI_Info_free(&out);
    MPI_Info_create(&in);
    MPI_Info_set(in, "only", "this");
    MPI_Comm_dup_with_info(a, in, &c);
    MPI_Comm_get_info(c, &out);
    CHECK(nkeys(out) == 1 && !strcmp(value_of(out, "only"), "this"), "dup_with_info's hints");
    MPI_Info_free(&out);
    MPI_Comm_free(&c);
    MPI_Comm_dup_with_info(a, MPI_INFO_NULL, &c);
    MPI_Comm_get_info(c, &out);
    CHECK(nkeys(out) == 0, "dup_with_info(MPI_INFO_NULL) has %d hints", nkeys(out));
    MPI_Info_free(&out);
    MPI_Comm_free(&c);
    MPI_Comm_idup_with_info(a, in, &c, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Comm_get_info(c, &out);
    CHECK(nkeys(out) == 1 && !strcmp(value_of(out, "only"), "this"), "idup_with_info's hints");
    MPI_Info_free(&out);
    MPI_Comm_free(&c);
    MPI_Comm_split_type(a, MPI_COMM_TYPE_SHARED, rank, in, &d);
    MPI_Comm_get_info(d, &out);
    CHECK(nkeys(out) == 1, "split_type's hints: %d", nkeys(out));
    MPI_Info_free(&out);
    MPI_Comm_free(&d);
    /* The guided kinds: the node when the info asks for shared memory, else MPI_COMM_NULL. */
    MPI_Comm_split_type(a, MPI_COMM_TYPE_HW_GUIDED, rank, in, &d);
    CHECK(d == MPI_COMM_NULL, "hw_guided with no resource type");
    MPI_Info_set(in, "mpi_hw_resource_type", "mpi_shared_memory");
    MPI_Comm_split_type(a, MPI_COMM_TYPE_HW_GUIDED, rank, in, &d);
    CHECK(d != MPI_COMM_NULL, "hw_guided shared memory");
    if (d != MPI_COMM_NULL) {
        int n;
        MPI_Comm_size(d, &n);
        CHECK(n == size, "hw_guided shared memory: size %d (one node)", n);
        MPI_Comm_free(&d);
    }
    MPI_Comm_split_type(a, MPI_COMM_TYPE_RESOURCE_GUIDED, rank, in, &d);
    CHECK(d != MPI_COMM_NULL, "resource_guided shared memory");
    if (d != MPI_COMM_NULL) MPI_Comm_free(&d);
    MPI_Info_delete(in, "mpi_hw_resource_type");
    rc = MPI_Alloc_mem(64, in, &mem);
    CHECK(rc == MPI_SUCCESS, "Alloc_mem with an info");
    if (rc == MPI_SUCCESS) MPI_Free_mem(mem);

    /* An invalid info is an error, never ignored (the calls are collective: every rank errs). */
    {
        MPI_Info gone = in;
        MPI_Info_free(&in);
        CHECK(in == MPI_INFO_NULL, "Info_free sets MPI_INFO_NULL");
        c = MPI_COMM_NULL;
        rc = MPI_Comm_dup_with_info(a, gone, &c);
        CHECK(class_of(rc) == MPI_ERR_INFO, "dup_with_info(freed info): %d", rc);
        rc = MPI_Comm_split_type(a, MPI_COMM_TYPE_SHARED, 0, gone, &d);
        CHECK(class_of(rc) == MPI_ERR_INFO, "split_type(freed info): %d", rc);
        rc = MPI_Alloc_mem(64, gone, &mem);
        CHECK(class_of(rc) == MPI_ERR_INFO, "Alloc_mem(freed info): %d", rc);
        rc = MPI_Comm_set_info(a, MPI_INFO_NULL);
        CHECK(class_of(rc) == MPI_ERR_INFO, "Comm_set_info(MPI_INFO_NULL): %d", rc);
        rc = MPI_Comm_get_info(MPI_COMM_NULL, &out);
        CHECK(class_of(rc) == MPI_ERR_COMM, "Comm_get_info(MPI_COMM_NULL): %d", rc);
    }
    MPI_Comm_free(&b);
    MPI_Comm_free(&a);
}

static void calls(void) {
    MPI_Info info, dup, gone;
    char key[MPI_MAX_INFO_KEY], val[MPI_MAX_INFO_VAL + 8], big[MPI_MAX_INFO_VAL + 8];
    int flag, len, rc;

    MPI_Info_create(&info);
    CHECK(nkeys(info) == 0, "a new info has keys");
    MPI_Info_set(info, "zeta", "1");
    MPI_Info_set(info, "alpha", "22");
    MPI_Info_set(info, "mid", "333");
    MPI_Info_set(info, "zeta", "4444"); /* replaced in place */
    CHECK(nkeys(info) == 3, "nkeys %d", nkeys(info));
    MPI_Info_get_nthkey(info, 0, key);
    CHECK(!strcmp(key, "zeta"), "key 0 is %s", key);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(!strcmp(key, "alpha"), "key 1 is %s", key);
    MPI_Info_get_nthkey(info, 2, key);
    CHECK(!strcmp(key, "mid"), "key 2 is %s", key);
    rc = MPI_Info_get_nthkey(info, 3, key);
    CHECK(class_of(rc) == MPI_ERR_ARG, "nthkey 3: %d", rc);
    rc = MPI_Info_get_nthkey(info, -1, key);
    CHECK(class_of(rc) == MPI_ERR_ARG, "nthkey -1: %d", rc);

    /* MPI_Info_get: valuelen excludes the NUL; longer values are truncated. */
    MPI_Info_get(info, "zeta", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(flag && !strcmp(val, "4444"), "get zeta: %d %s", flag, val);
    memset(val, 'x', sizeof val);
    MPI_Info_get(info, "zeta", 2, val, &flag);
    CHECK(flag && !strcmp(val, "44") && val[3] == 'x', "truncated get: %s", val);
    MPI_Info_get(info, "nope", MPI_MAX_INFO_VAL - 1, val, &flag);
    CHECK(!flag, "get of a missing key sets flag");
    MPI_Info_get_valuelen(info, "mid", &len, &flag);
    CHECK(flag && len == 3, "valuelen %d", len);
    len = 77;
    MPI_Info_get_valuelen(info, "nope", &len, &flag);
    CHECK(!flag && len == 77, "valuelen of a missing key");

    /* MPI_Info_get_string: buflen in is the buffer, out the value's length + 1. */
    len = 0;
    MPI_Info_get_string(info, "alpha", &len, NULL, &flag);
    CHECK(flag && len == 3, "get_string length query: %d", len);
    len = 2;
    memset(val, 'x', sizeof val);
    MPI_Info_get_string(info, "zeta", &len, val, &flag);
    CHECK(flag && len == 5 && !strcmp(val, "4"), "get_string short buffer: %d %s", len, val);
    len = sizeof val;
    MPI_Info_get_string(info, "zeta", &len, val, &flag);
    CHECK(flag && len == 5 && !strcmp(val, "4444"), "get_string: %d %s", len, val);
    len = 9;
    MPI_Info_get_string(info, "nope", &len, val, &flag);
    CHECK(!flag && len == 9, "get_string of a missing key");

    /* Limits: a key of MPI_MAX_INFO_KEY - 1 bytes and a value of MPI_MAX_INFO_VAL - 1 fit. */
    memset(big, 'k', MPI_MAX_INFO_KEY - 1);
    big[MPI_MAX_INFO_KEY - 1] = 0;
    CHECK(MPI_Info_set(info, big, "v") == MPI_SUCCESS, "longest key");
    MPI_Info_get_nthkey(info, 3, key);
    CHECK(strlen(key) == MPI_MAX_INFO_KEY - 1, "longest key back: %zu", strlen(key));
    MPI_Info_delete(info, big);
    big[MPI_MAX_INFO_KEY - 1] = 'k';
    big[MPI_MAX_INFO_KEY] = 0;
    rc = MPI_Info_set(info, big, "v");
    CHECK(class_of(rc) == MPI_ERR_INFO_KEY, "key too long: %d", rc);
    rc = MPI_Info_get(info, big, 10, val, &flag);
    CHECK(class_of(rc) == MPI_ERR_INFO_KEY, "get with a key too long: %d", rc);
    rc = MPI_Info_set(info, "", "v");
    CHECK(class_of(rc) == MPI_ERR_INFO_KEY, "empty key: %d", rc);
    memset(big, 'v', MPI_MAX_INFO_VAL - 1);
    big[MPI_MAX_INFO_VAL - 1] = 0;
    CHECK(MPI_Info_set(info, "v", big) == MPI_SUCCESS, "longest value");
    MPI_Info_get_valuelen(info, "v", &len, &flag);
    CHECK(len == MPI_MAX_INFO_VAL - 1, "longest value's length %d", len);
    big[MPI_MAX_INFO_VAL - 1] = 'v';
    big[MPI_MAX_INFO_VAL] = 0;
    rc = MPI_Info_set(info, "v", big);
    CHECK(class_of(rc) == MPI_ERR_INFO_VALUE, "value too long: %d", rc);
    MPI_Info_delete(info, "v");

    /* delete */
    CHECK(MPI_Info_delete(info, "alpha") == MPI_SUCCESS, "delete");
    rc = MPI_Info_delete(info, "alpha");
    CHECK(class_of(rc) == MPI_ERR_INFO_NOKEY, "delete of a missing key: %d", rc);
    MPI_Info_get_nthkey(info, 1, key);
    CHECK(nkeys(info) == 2 && !strcmp(key, "mid"), "order after delete: %s", key);

    /* dup is a copy of its own */
    MPI_Info_dup(info, &dup);
    MPI_Info_set(dup, "only_in_dup", "1");
    MPI_Info_set(info, "mid", "changed");
    CHECK(nkeys(dup) == 3 && nkeys(info) == 2, "dup independent: %d %d", nkeys(dup), nkeys(info));
    CHECK(!strcmp(value_of(dup, "mid"), "333"), "dup's value: %s", value_of(dup, "mid"));
    MPI_Info_get_nthkey(dup, 0, key);
    CHECK(!strcmp(key, "zeta"), "dup keeps the order");
    MPI_Info_free(&dup);

    /* handles: toint/fromint, MPI_INFO_NULL, freed, predefined */
    CHECK(MPI_Info_fromint(MPI_Info_toint(info)) == info, "toint/fromint");
    CHECK(MPI_Get_hw_resource_info(&dup) == MPI_SUCCESS && nkeys(dup) >= 0, "hw_resource_info");
    MPI_Info_free(&dup);
    gone = info;
    MPI_Info_free(&info);
    CHECK(info == MPI_INFO_NULL, "freed info is MPI_INFO_NULL");
    rc = MPI_Info_set(gone, "a", "b");
    CHECK(class_of(rc) == MPI_ERR_INFO, "set on a freed info: %d", rc);
    rc = MPI_Info_get_nkeys(MPI_INFO_NULL, &len);
    CHECK(class_of(rc) == MPI_ERR_INFO, "nkeys of MPI_INFO_NULL: %d", rc);
    rc = MPI_Info_dup(MPI_INFO_NULL, &dup);
    CHECK(class_of(rc) == MPI_ERR_INFO, "dup of MPI_INFO_NULL: %d", rc);
    rc = MPI_Info_free(&gone);
    CHECK(class_of(rc) == MPI_ERR_INFO, "double free: %d", rc);
    dup = MPI_INFO_ENV;
    rc = MPI_Info_free(&dup);
    CHECK(class_of(rc) == MPI_ERR_INFO, "free of MPI_INFO_ENV: %d", rc);
    rc = MPI_Info_set(MPI_INFO_ENV, "a", "b");
    CHECK(class_of(rc) == MPI_ERR_INFO, "set on MPI_INFO_ENV: %d", rc);
}

static void env(int argc, char **argv) {
    MPI_Info e, dup;
    char want[16];
    snprintf(want, sizeof want, "%d", size);
    CHECK(strstr(value_of(MPI_INFO_ENV, "command"), "info") != NULL, "command: %s",
          value_of(MPI_INFO_ENV, "command"));
    CHECK(!strcmp(value_of(MPI_INFO_ENV, "argv"), "first second"), "argv: %s",
          value_of(MPI_INFO_ENV, "argv"));
    CHECK(!strcmp(value_of(MPI_INFO_ENV, "maxprocs"), want), "maxprocs: %s",
          value_of(MPI_INFO_ENV, "maxprocs"));
    CHECK(value_of(MPI_INFO_ENV, "wdir")[0] == '/', "wdir: %s", value_of(MPI_INFO_ENV, "wdir"));
    CHECK(value_of(MPI_INFO_ENV, "arch")[0] != 0, "arch");
    CHECK(value_of(MPI_INFO_ENV, "thread_level")[0] != 0, "thread_level");
    MPI_Info_dup(MPI_INFO_ENV, &dup);
    CHECK(nkeys(dup) == nkeys(MPI_INFO_ENV) && nkeys(dup) >= 6, "dup of MPI_INFO_ENV: %d", nkeys(dup));
    MPI_Info_free(&dup);

    MPI_Info_create_env(argc, argv, &e);
    CHECK(!strcmp(value_of(e, "command"), argv[0]), "create_env command: %s", value_of(e, "command"));
    CHECK(!strcmp(value_of(e, "argv"), "first second"), "create_env argv: %s", value_of(e, "argv"));
    MPI_Info_free(&e);
}

int main(int argc, char **argv) {
    MPI_Info early;
    int flag;
    char val[16];

    /* Info calls are allowed before MPI_Init and after MPI_Finalize. */
    MPI_Info_create(&early);
    MPI_Info_set(early, "before", "init");

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(!strcmp(value_of(early, "before"), "init"), "info made before MPI_Init");

    calls();
    env(argc, argv);
    comm_hints();

    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Finalize();

    MPI_Info_set(early, "after", "finalize");
    MPI_Info_get(early, "after", sizeof val - 1, val, &flag);
    if (!flag || strcmp(val, "finalize")) errs++;
    MPI_Info_free(&early);
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    else if (rank == 0) printf(" Found %d errors\n", errs);
    return 0;
}
