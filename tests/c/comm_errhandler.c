/* User error handlers (invoked with the communicator and the code, also by
 * MPI_Comm_call_errhandler; inherited by dup; kept after MPI_Errhandler_free), user error
 * classes, codes and strings, and every invalid-argument class under MPI_ERRORS_RETURN. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs = 0, rank, size;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static int calls = 0, last_code = 0;
static MPI_Comm last_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...) {
    int r;
    calls++;
    last_code = *code;
    last_comm = *comm;
    /* Handlers may call MPI. */
    MPI_Comm_rank(*comm, &r);
    if (r != rank) errs++;
}

static int class_of(int code) {
    int c;
    MPI_Error_class(code, &c);
    return c;
}

int main(int argc, char **argv) {
    int rc, x = 0;
    MPI_Errhandler eh, got;
    MPI_Comm dup;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == eh, "get_errhandler returned another handler");

    rc = MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(calls == 1 && class_of(last_code) == MPI_ERR_RANK && last_comm == MPI_COMM_WORLD,
          "handler: calls %d code %d", calls, last_code);
    CHECK(class_of(rc) == MPI_ERR_RANK, "send to rank size returned %d", rc);

    /* Inherited by a dup, called with the dup's handle. */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    rc = MPI_Send(&x, 1, MPI_INT, 0, -7, dup);
    CHECK(calls == 2 && class_of(last_code) == MPI_ERR_TAG && last_comm == dup, "dup handler: calls %d code %d", calls, last_code);

    /* Still in use after MPI_Errhandler_free. */
    MPI_Errhandler_free(&eh);
    CHECK(eh == MPI_ERRHANDLER_NULL, "free did not set MPI_ERRHANDLER_NULL");
    MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER);
    CHECK(calls == 3 && last_code == MPI_ERR_OTHER, "call_errhandler: calls %d code %d", calls, last_code);

    /* User classes, codes, strings. */
    {
        int cls, code, len, lastused, flag, *p;
        char s[MPI_MAX_ERROR_STRING];
        MPI_Add_error_class(&cls);
        MPI_Add_error_code(cls, &code);
        MPI_Add_error_string(code, "my special error");
        CHECK(cls > MPI_ERR_LASTCODE && code > cls, "class %d code %d", cls, code);
        CHECK(class_of(code) == cls, "class of my code %d", class_of(code));
        MPI_Error_string(code, s, &len);
        CHECK(strcmp(s, "my special error") == 0 && len == 16, "string '%s'", s);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag);
        lastused = *p;
        CHECK(flag && lastused >= code, "MPI_LASTUSEDCODE %d", lastused);
        MPI_Comm_call_errhandler(MPI_COMM_WORLD, code);
        CHECK(calls == 4 && last_code == code, "user code: calls %d code %d", calls, last_code);
        CHECK(class_of(MPI_ERR_TOPOLOGY) == MPI_ERR_TOPOLOGY, "predefined classes are their own class");
    }
    MPI_Comm_free(&dup);

    /* Every invalid-argument class, with MPI_ERRORS_RETURN. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* MPI_Remove_error_string/_code/_class (MPI 4.1): a code or class goes once its string
     * has; a class once its codes have; predefined ones and removed ones are MPI_ERR_ARG. */
    {
        int cls, code, len = -1;
        char s[MPI_MAX_ERROR_STRING];
        MPI_Add_error_class(&cls);
        MPI_Add_error_code(cls, &code);
        MPI_Add_error_string(code, "to be removed");
        CHECK(MPI_Remove_error_class(cls) == MPI_ERR_ARG, "class with a code removed");
        CHECK(MPI_Remove_error_code(code) == MPI_ERR_ARG, "code with a string removed");
        CHECK(MPI_Remove_error_code(cls) == MPI_ERR_ARG, "class removed as a code");
        CHECK(MPI_Remove_error_string(code) == MPI_SUCCESS, "remove string");
        MPI_Error_string(code, s, &len);
        CHECK(len == 0 && s[0] == 0, "string after removal '%s'", s);
        CHECK(MPI_Remove_error_code(code) == MPI_SUCCESS, "remove code");
        CHECK(MPI_Remove_error_code(code) == MPI_ERR_ARG, "code removed twice");
        CHECK(MPI_Remove_error_class(cls) == MPI_SUCCESS, "remove class");
        CHECK(MPI_Remove_error_class(cls) == MPI_ERR_ARG, "class removed twice");
        CHECK(MPI_Remove_error_class(MPI_ERR_OTHER) == MPI_ERR_ARG, "predefined class removed");
        CHECK(MPI_Remove_error_string(MPI_ERR_OTHER) == MPI_ERR_ARG, "predefined string removed");
    }
    {
        char buf[16];
        MPI_Request req = (MPI_Request)(void *)0x7777, rq;
        MPI_Group g;
        MPI_Comm freed;
        calls = 0;
        CHECK(MPI_Send(buf, 1, MPI_CHAR, 0, 0, MPI_COMM_NULL) == MPI_ERR_COMM, "comm");
        MPI_Comm_dup(MPI_COMM_WORLD, &freed);
        MPI_Comm stale = freed;
        MPI_Comm_free(&freed);
        CHECK(MPI_Recv(buf, 1, MPI_CHAR, 0, 0, stale, MPI_STATUS_IGNORE) == MPI_ERR_COMM, "freed comm");
        CHECK(MPI_Send(buf, 1, (MPI_Datatype)(void *)0x7777, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE, "datatype");
        CHECK(MPI_Send(buf, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD) == MPI_ERR_TYPE, "MPI_DATATYPE_NULL");
        CHECK(MPI_Send(buf, 1, MPI_CHAR, -1, 0, MPI_COMM_WORLD) == MPI_ERR_RANK, "rank -1");
        CHECK(MPI_Irecv(buf, 1, MPI_CHAR, size, 0, MPI_COMM_WORLD, &rq) == MPI_ERR_RANK, "recv rank size");
        CHECK(MPI_Send(buf, 1, MPI_CHAR, 0, -1, MPI_COMM_WORLD) == MPI_ERR_TAG, "tag -1");
        CHECK(MPI_Recv(buf, 1, MPI_CHAR, 0, -3, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_ERR_TAG, "recv tag -3");
        CHECK(MPI_Send(buf, -1, MPI_CHAR, 0, 0, MPI_COMM_WORLD) == MPI_ERR_COUNT, "count");
        CHECK(MPI_Send(NULL, 4, MPI_CHAR, 0, 0, MPI_COMM_WORLD) == MPI_ERR_BUFFER, "buffer");
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_ERR_REQUEST, "request");
        CHECK(MPI_Group_size(MPI_GROUP_NULL, &x) == MPI_ERR_GROUP, "group");
        CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, 999, buf, &x) == MPI_ERR_KEYVAL, "keyval");
        CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)(void *)0x7777) == MPI_ERR_ERRHANDLER, "errhandler");
        CHECK(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, NULL) == MPI_ERR_ARG, "NULL newcomm");
        CHECK(MPI_Comm_rank(MPI_COMM_WORLD, NULL) == MPI_ERR_ARG, "NULL rank");
        /* Handles of one kind passed as another. */
        MPI_Comm_group(MPI_COMM_WORLD, &g);
        CHECK(MPI_Group_size((MPI_Group)(void *)MPI_COMM_WORLD, &x) == MPI_ERR_GROUP, "comm as group");
        CHECK(MPI_Comm_size((MPI_Comm)(void *)g, &x) == MPI_ERR_COMM, "group as comm");
        CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)(void *)g) == MPI_ERR_ERRHANDLER, "group as errhandler");
        MPI_Group_free(&g);
        CHECK(calls == 0, "user handler called after MPI_ERRORS_RETURN was set");
        /* MPI_Comm_call_errhandler with MPI_ERRORS_RETURN: the handler was called, and returned
         * (MPI 4.1 section 9.3): MPI_SUCCESS, as Open MPI (mpi4py's test_errhandler expects it). */
        CHECK(MPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_OTHER) == MPI_SUCCESS, "call_errhandler under RETURN");
    }
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == MPI_ERRORS_RETURN, "errhandler is not MPI_ERRORS_RETURN");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == MPI_ERRORS_ABORT, "errhandler is not MPI_ERRORS_ABORT");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    MPI_Finalize();
    return errs != 0;
}
