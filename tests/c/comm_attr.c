/* Attribute caching: copy and delete callbacks called the right number of times (on dup,
 * replace, delete, free), MPI_COMM_DUP_FN / MPI_COMM_NULL_COPY_FN, callbacks that call MPI,
 * predefined attributes, freed keyvals, and COMM_SELF's attributes deleted at MPI_Finalize. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs = 0, rank, size;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static int copies = 0, deletes = 0, self_deleted = 0;
static int extra_seen = 0;

static int copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    int r;
    /* Callbacks may call MPI. */
    MPI_Comm_rank(comm, &r);
    if (r != rank) errs++;
    if (extra == &extra_seen) extra_seen++;
    copies++;
    *(void **)out = (void *)((char *)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int no_copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    copies++;
    *flag = 0;
    return MPI_SUCCESS;
}

static int failing_copy_fn(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag) {
    return MPI_ERR_OTHER;
}

static int delete_fn(MPI_Comm comm, int keyval, void *val, void *extra) {
    int s;
    MPI_Comm_size(comm, &s);
    if (s != size) errs++;
    deletes++;
    return MPI_SUCCESS;
}

static int self_delete_fn(MPI_Comm comm, int keyval, void *val, void *extra) {
    int flag;
    MPI_Finalized(&flag);
    if (!flag && comm == MPI_COMM_SELF && val == (void *)42) self_deleted = 1;
    return MPI_SUCCESS;
}

static int win_free_keyval_fn(MPI_Win win, int keyval, void *val, void *extra) {
    (void)win; (void)val; (void)extra;
    return MPI_Win_free_keyval(&keyval);
}

int main(int argc, char **argv) {
    int k1, k2, k3, k4, kself, flag, rc;
    void *v;
    MPI_Comm a, b, c;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm_create_keyval(copy_fn, delete_fn, &k1, &extra_seen);
    MPI_Comm_create_keyval(no_copy_fn, delete_fn, &k2, NULL);
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &k3, NULL);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_fn, &k4, NULL);

    MPI_Comm_dup(MPI_COMM_WORLD, &a);
    MPI_Comm_set_attr(a, k1, (void *)100);
    MPI_Comm_set_attr(a, k2, (void *)200);
    MPI_Comm_set_attr(a, k3, (void *)300);
    MPI_Comm_set_attr(a, k4, (void *)400);
    MPI_Comm_get_attr(a, k1, &v, &flag);
    CHECK(flag && v == (void *)100, "get k1: %d %p", flag, v);

    /* dup: k1 copied (+1), k2 asked but declined, k3 copied as is, k4 not copied. */
    MPI_Comm_dup(a, &b);
    CHECK(copies == 2 && extra_seen == 1, "copies %d extra %d", copies, extra_seen);
    MPI_Comm_get_attr(b, k1, &v, &flag);
    CHECK(flag && v == (void *)101, "dup k1: %d %p", flag, v);
    MPI_Comm_get_attr(b, k2, &v, &flag);
    CHECK(!flag, "dup k2 present");
    MPI_Comm_get_attr(b, k3, &v, &flag);
    CHECK(flag && v == (void *)300, "dup k3: %d %p", flag, v);
    MPI_Comm_get_attr(b, k4, &v, &flag);
    CHECK(!flag, "dup k4 present");

    /* Replace calls delete on the old value; delete_attr calls delete; get then finds none. */
    MPI_Comm_set_attr(a, k1, (void *)111);
    CHECK(deletes == 1, "deletes after replace %d", deletes);
    MPI_Comm_delete_attr(a, k2);
    CHECK(deletes == 2, "deletes after delete_attr %d", deletes);
    MPI_Comm_get_attr(a, k2, &v, &flag);
    CHECK(!flag, "k2 still present after delete");

    /* Free: a has k1, k3 (no delete fn), k4 -> 2 deletes; b has k1, k3 -> 1 delete. */
    MPI_Comm_free(&a);
    CHECK(deletes == 4, "deletes after freeing a %d", deletes);
    /* A freed keyval: no new use, but existing attributes are still deleted on free. */
    MPI_Comm_free_keyval(&k1);
    CHECK(k1 == MPI_KEYVAL_INVALID, "freed keyval not MPI_KEYVAL_INVALID");
    MPI_Comm_free(&b);
    CHECK(deletes == 5, "deletes after freeing b %d", deletes);

    /* A failing copy callback fails the dup. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_create_keyval(failing_copy_fn, MPI_COMM_NULL_DELETE_FN, &kself, NULL);
    MPI_Comm_set_attr(c, kself, (void *)1);
    {
        MPI_Comm d = MPI_COMM_NULL;
        rc = MPI_Comm_dup(c, &d);
        CHECK(rc == MPI_ERR_OTHER && d == MPI_COMM_NULL, "dup with a failing copy: rc %d", rc);
    }
    MPI_Comm_free(&c);
    MPI_Comm_free_keyval(&kself);

    /* Bad keyvals. */
    rc = MPI_Comm_set_attr(MPI_COMM_WORLD, 12345, NULL);
    CHECK(rc == MPI_ERR_KEYVAL, "set with a bad keyval: %d", rc);
    {
        int stale = k2;
        MPI_Comm_free_keyval(&k2);
        rc = MPI_Comm_get_attr(MPI_COMM_WORLD, stale, &v, &flag);
        CHECK(rc == MPI_ERR_KEYVAL, "get with a freed keyval: %d", rc);
        rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL);
        CHECK(rc == MPI_ERR_KEYVAL, "set a predefined attribute: %d", rc);
        rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, k3);
        CHECK(rc == MPI_ERR_KEYVAL, "delete an absent attribute: %d", rc);
    }

    /* Predefined attributes. */
    {
        int *p;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag);
        CHECK(flag && *p >= 32767, "MPI_TAG_UB %d", flag ? *p : -1);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag);
        CHECK(flag && *p == MPI_PROC_NULL, "MPI_HOST");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag);
        CHECK(flag && (*p == MPI_ANY_SOURCE || *p == rank), "MPI_IO");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag);
        CHECK(flag && (*p == 0 || *p == 1), "MPI_WTIME_IS_GLOBAL");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag);
        CHECK(!flag || *p >= size, "MPI_UNIVERSE_SIZE");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &p, &flag);
        CHECK(!flag || *p == 0, "MPI_APPNUM");
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag);
        CHECK(flag && *p >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE");
        /* The deprecated MPI-1 names still work. */
        MPI_Attr_get(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag);
        CHECK(flag && *p >= 32767, "MPI_Attr_get(MPI_TAG_UB)");
    }

    /* Many keyvals and attributes. */
    for (int i = 0; i < 200; i++) {
        int k;
        MPI_Comm t;
        MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &k, NULL);
        MPI_Comm_dup(MPI_COMM_SELF, &t);
        MPI_Comm_set_attr(t, k, (void *)(long)i);
        MPI_Comm_get_attr(t, k, &v, &flag);
        CHECK(flag && v == (void *)(long)i, "attribute %d", i);
        MPI_Comm_free(&t);
        MPI_Comm_free_keyval(&k);
    }

    MPI_Comm_free_keyval(&k3);
    MPI_Comm_free_keyval(&k4);

    /* A window keyval freed by a delete callback while another window still holds its
     * attribute, then by the user: the second free is no error (as MPICH's
     * attr/keyval_double_free_win expects, and as for communicator keyvals). */
    {
        int wk, buf[2] = {0, 0};
        MPI_Win w[2];
        MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, win_free_keyval_fn, &wk, NULL);
        for (int i = 0; i < 2; i++) {
            MPI_Win_create(&buf[i], sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w[i]);
            MPI_Win_set_attr(w[i], wk, NULL);
        }
        MPI_Win_free(&w[0]);
        CHECK(MPI_Win_free_keyval(&wk) == MPI_SUCCESS, "second free of a window keyval");
        CHECK(wk == MPI_KEYVAL_INVALID, "freed window keyval handle reset");
        MPI_Win_free(&w[1]);
    }

    /* Deleted when MPI_Finalize starts. */
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &kself, NULL);
    MPI_Comm_set_attr(MPI_COMM_SELF, kself, (void *)42);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (!self_deleted) {
        printf("rank %d: COMM_SELF attribute not deleted at MPI_Finalize\n", rank);
        errs++;
    }
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    return errs != 0;
}
