/* MPI Sessions: two sessions at once and one after another, the process sets mpi://WORLD and
 * mpi://SELF (names, info, groups), a communicator from a session's group, errors through
 * the session's handler, MPI_Initialized/Finalized following the world model only, and a
 * session living on past MPI_Finalize (argv[1] == "world": the world model is used too), and
 * sessions started again after all have ended (the runtime goes down at exit then). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...)                                        \
    do {                                                        \
        if (!(cond)) {                                          \
            printf("%s:%d: ", __FILE__, __LINE__);              \
            printf(__VA_ARGS__);                                \
            printf("\n");                                       \
            fflush(stdout);                                     \
            errs++;                                             \
        }                                                       \
    } while (0)

static int eclass(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static int handler_calls, handler_code;
static MPI_Session handler_session;

static void session_handler(MPI_Session *s, int *code, ...) {
    handler_calls++;
    handler_session = *s;
    handler_code = *code;
}

/* Use a session: psets, a communicator over WORLD from it, an allreduce of the errors. */
static void use_session(MPI_Session s, int *world_rank, int *world_size) {
    int n, len, rc, flag;
    char name[64], val[64];
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    CHECK(n >= 2, "num psets %d", n);
    len = 0;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, NULL);
    CHECK(len == (int)strlen("mpi://WORLD") + 1, "pset len %d", len);
    len = sizeof name;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 0, &len, name);
    CHECK(!strcmp(name, "mpi://WORLD"), "pset 0 %s", name);
    len = sizeof name;
    MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 1, &len, name);
    CHECK(!strcmp(name, "mpi://SELF"), "pset 1 %s", name);
    MPI_Info info;
    MPI_Session_get_pset_info(s, "mpi://SELF", &info);
    MPI_Info_get(info, "mpi_size", sizeof val, val, &flag);
    CHECK(flag && !strcmp(val, "1"), "SELF mpi_size %s", val);
    MPI_Info_free(&info);
    MPI_Group g, sg;
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    MPI_Group_size(g, world_size);
    MPI_Group_rank(g, world_rank);
    MPI_Session_get_pset_info(s, "mpi://WORLD", &info);
    MPI_Info_get(info, "mpi_size", sizeof val, val, &flag);
    CHECK(flag && atoi(val) == *world_size, "WORLD mpi_size %s", val);
    MPI_Info_free(&info);
    MPI_Group_from_session_pset(s, "mpi://SELF", &sg);
    MPI_Group_size(sg, &n);
    CHECK(n == 1, "SELF size %d", n);
    MPI_Group_free(&sg);
    MPI_Comm comm;
    rc = MPI_Comm_create_from_group(g, "rmpi.test.session", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm);
    CHECK(rc == MPI_SUCCESS, "comm_create_from_group %d", rc);
    MPI_Group_free(&g);
    int r, sz, sum = 0, one = 1;
    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &sz);
    CHECK(r == *world_rank && sz == *world_size, "comm rank %d size %d", r, sz);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
    CHECK(sum == sz, "allreduce %d", sum);
    MPI_Comm_free(&comm);
    /* Errors go through the session's handler (ERRORS_RETURN here). */
    MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN);
    rc = MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    CHECK(eclass(rc) == MPI_ERR_ARG, "unknown pset: %d", eclass(rc));
    len = sizeof name;
    rc = MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 5, &len, name);
    CHECK(eclass(rc) == MPI_ERR_ARG, "nth pset out of range: %d", eclass(rc));
    MPI_Errhandler eh;
    MPI_Session_get_errhandler(s, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "session handler");
    /* A user handler of the session's own. */
    MPI_Session_create_errhandler(session_handler, &eh);
    MPI_Session_set_errhandler(s, eh);
    handler_calls = 0;
    rc = MPI_Group_from_session_pset(s, "mpi://NOWHERE", &g);
    CHECK(eclass(rc) == MPI_ERR_ARG && handler_calls == 1 && handler_session == s,
          "session user handler: %d calls", handler_calls);
    MPI_Session_call_errhandler(s, MPI_ERR_OTHER);
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER, "session call_errhandler");
    MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
    MPI_Session_get_info(s, &info);
    MPI_Info_free(&info);
}

int main(int argc, char **argv) {
    int world = argc > 1 && !strcmp(argv[1], "world");
    int flag, rank = 0, size = 1;
    MPI_Session a, b;
    MPI_Initialized(&flag);
    CHECK(!flag, "initialized before anything");
    if (!world) {
        /* A handler made before any session, given to MPI_Session_init (MPICH's
         * errhan/sessioncall); it outlives that session. */
        MPI_Errhandler early;
        int rc = MPI_Session_create_errhandler(session_handler, &early);
        CHECK(rc == MPI_SUCCESS, "Session_create_errhandler before any session: %d", rc);
        rc = MPI_Session_init(MPI_INFO_NULL, early, &a);
        CHECK(rc == MPI_SUCCESS, "Session_init with an early handler: %d", rc);
        MPI_Session_call_errhandler(a, MPI_ERR_OTHER);
        CHECK(handler_calls == 1 && handler_code == MPI_ERR_OTHER && handler_session == a,
              "early handler: %d calls", handler_calls);
        MPI_Errhandler_free(&early);
        CHECK(early == MPI_ERRHANDLER_NULL, "Errhandler_free");
        MPI_Session_finalize(&a);
        handler_calls = 0;
    }
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &a);
    MPI_Initialized(&flag);
    CHECK(!flag, "a session made MPI_Initialized true");
    if (world) {
        MPI_Init(&argc, &argv);
        MPI_Initialized(&flag);
        CHECK(flag, "MPI_Init: not initialized");
    }
    {
        /* The runtime was started by `a` (FUNNELED by default): a session asking for MULTIPLE
         * gets FUNNELED, and its info says so. */
        MPI_Info hint, used;
        MPI_Session c;
        char v[64];
        int found = 0;
        MPI_Info_create(&hint);
        MPI_Info_set(hint, "thread_level", "MPI_THREAD_MULTIPLE");
        MPI_Session_init(hint, MPI_ERRORS_RETURN, &c);
        MPI_Session_get_info(c, &used);
        int vlen = sizeof v;
        MPI_Info_get_string(used, "thread_level", &vlen, v, &found);
        CHECK(found && !strcmp(v, "MPI_THREAD_FUNNELED"), "session thread_level %s", found ? v : "(none)");
        MPI_Info_free(&used);
        MPI_Info_free(&hint);
        MPI_Session_finalize(&c);
    }
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &b);
    use_session(a, &rank, &size);
    use_session(b, &rank, &size);
    MPI_Session_finalize(&a);
    CHECK(a == MPI_SESSION_NULL, "finalize sets MPI_SESSION_NULL");
    if (world) {
        MPI_Finalize();
        MPI_Finalized(&flag);
        CHECK(flag, "MPI_Finalized false after MPI_Finalize");
    }
    /* b keeps the runtime up; a new session works after the world model ended. */
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &a);
    use_session(a, &rank, &size);
    MPI_Session_finalize(&a);
    MPI_Finalized(&flag);
    CHECK(flag == world, "MPI_Finalized %d", flag);
    /* A session's buffer is handed back at detach; flushes complete. */
    {
        static char buf[1 << 12];
        void *back;
        int n, rc;
        MPI_Request req;
        MPI_Session_attach_buffer(b, buf, sizeof buf);
        rc = MPI_Session_attach_buffer(b, buf, sizeof buf);
        CHECK(eclass(rc) == MPI_ERR_BUFFER, "second attach: %d", eclass(rc));
        MPI_Session_flush_buffer(b);
        MPI_Session_iflush_buffer(b, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Session_detach_buffer(b, &back, &n);
        CHECK(back == buf && n == (int)sizeof buf, "detach gave %p %d", back, n);
        MPI_Session_attach_buffer(b, MPI_BUFFER_AUTOMATIC, 0);
        MPI_Session_detach_buffer(b, &back, &n);
        CHECK(back == MPI_BUFFER_AUTOMATIC, "automatic buffer");
        /* Buffered sends on a communicator made from the session's group use its buffer
         * (no process buffer is attached). */
        MPI_Group sg;
        MPI_Comm sc;
        int sr, ss, v = 42;
        MPI_Session_attach_buffer(b, buf, sizeof buf);
        MPI_Group_from_session_pset(b, "mpi://WORLD", &sg);
        MPI_Comm_create_from_group(sg, "rmpi.test.bsend", MPI_INFO_NULL, MPI_ERRORS_RETURN, &sc);
        MPI_Group_free(&sg);
        MPI_Comm_rank(sc, &sr);
        MPI_Comm_size(sc, &ss);
        if (sr == 0) {
            rc = MPI_Bsend(&v, 1, MPI_INT, ss - 1, 5, sc);
            CHECK(rc == MPI_SUCCESS, "bsend with the session's buffer: %d", rc);
        }
        if (sr == ss - 1) {
            v = 0;
            MPI_Recv(&v, 1, MPI_INT, 0, 5, sc, MPI_STATUS_IGNORE);
            CHECK(v == 42, "bsend gave %d", v);
        }
        MPI_Session_detach_buffer(b, &back, &n);
        CHECK(back == buf, "detach after bsend");
        MPI_Comm_free(&sc);
    }
    MPI_Session_finalize(&b);
    /* Every session ended: sessions start again, one after another (MPICH's session_re_init). */
    for (int i = 0; i < 3; i++) {
        MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &a);
        use_session(a, &rank, &size);
        MPI_Session_finalize(&a);
    }
    /* Gather the verdict over a last session's communicator. */
    MPI_Group g;
    MPI_Comm comm;
    int total = 0;
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &b);
    MPI_Group_from_session_pset(b, "mpi://WORLD", &g);
    MPI_Comm_create_from_group(g, "rmpi.test.verdict", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm);
    MPI_Group_free(&g);
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, comm);
    MPI_Comm_free(&comm);
    MPI_Session_finalize(&b);
    MPI_Finalized(&flag);
    CHECK(flag == world, "MPI_Finalized %d at the end", flag);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    return 0;
}
