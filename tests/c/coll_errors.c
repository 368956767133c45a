/* Errors in collectives. A user error handler on a communicator is called by a bad root (and
 * a bad op in a non-blocking collective) with that communicator's handle, and the call then
 * returns the code. Under MPI_ERRORS_RETURN every invalid-argument class comes back from the
 * collectives: root, op, count, datatype, communicator, buffer (NULL, MPI_IN_PLACE misuse) and a
 * NULL request pointer. Every rank makes the same mistake, so nobody is left waiting; a final
 * Allreduce checks the ranks are still in step.
 * With argument "fatal": a bad root under MPI_ERRORS_ARE_FATAL, which must abort the job with
 * a message naming the call and the argument. */
#include "coll_util.h"

static int calls = 0, last_code = 0;
static MPI_Comm last_comm = MPI_COMM_NULL;

static void handler(MPI_Comm *comm, int *code, ...) {
    calls++;
    last_code = *code;
    last_comm = *comm;
}

static int cls(int rc) {
    int c = -1;
    MPI_Error_class(rc, &c);
    return c;
}

#define EXPECT(call, want)                                                             \
    do {                                                                               \
        int rc_ = (call);                                                              \
        CHECK(cls(rc_) == (want), "%s gave class %d, expected %s (%d)", #call, cls(rc_), \
              #want, want);                                                            \
    } while (0)

int main(int argc, char **argv) {
    start(&argc, &argv);
    int x[4] = {1, 2, 3, 4}, y[4], *big = xmalloc(4 * size * sizeof(int));
    if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
        MPI_Bcast(x, 1, MPI_INT, size + 3, MPI_COMM_WORLD);
        printf("rank %d: MPI_Bcast with a bad root returned under MPI_ERRORS_ARE_FATAL\n", rank);
        return 1;
    }

    /* (d) A user handler on a dup, invoked by collectives. */
    MPI_Comm dup;
    MPI_Errhandler eh;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(dup, eh);
    MPI_Errhandler_free(&eh);
    int rc = MPI_Bcast(x, 1, MPI_INT, -1, dup);
    CHECK(calls == 1 && last_comm == dup && cls(last_code) == MPI_ERR_ROOT,
          "bcast bad root: handler calls %d, code class %d", calls, cls(last_code));
    CHECK(rc == last_code, "bcast returned %d, handler saw %d", rc, last_code);
    MPI_Request r = MPI_REQUEST_NULL;
    rc = MPI_Iallreduce(x, y, 1, MPI_INT, MPI_OP_NULL, dup, &r);
    CHECK(calls == 2 && last_comm == dup && cls(last_code) == MPI_ERR_OP,
          "iallreduce op null: handler calls %d, code class %d", calls, cls(last_code));
    rc = MPI_Reduce(x, y, 1, MPI_DOUBLE, MPI_BAND, size, dup);
    CHECK(calls == 3 && cls(rc) == MPI_ERR_ROOT, "reduce: calls %d class %d", calls, cls(rc));
    /* WORLD keeps its own (fatal) handler: the dup's handler is not WORLD's. */
    MPI_Errhandler got;
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got);
    CHECK(got == MPI_ERRORS_ARE_FATAL, "WORLD's handler changed");

    /* (e) Every invalid-argument class, MPI_ERRORS_RETURN. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm w = MPI_COMM_WORLD;
    int *cnt = xmalloc(size * sizeof(int)), *dsp = xmalloc(size * sizeof(int));
    for (int i = 0; i < size; i++) {
        cnt[i] = 1;
        dsp[i] = i;
    }
    /* root */
    EXPECT(MPI_Bcast(x, 1, MPI_INT, -1, w), MPI_ERR_ROOT);
    EXPECT(MPI_Bcast(x, 1, MPI_INT, size, w), MPI_ERR_ROOT);
    EXPECT(MPI_Reduce(x, y, 1, MPI_INT, MPI_SUM, size, w), MPI_ERR_ROOT);
    EXPECT(MPI_Gather(x, 1, MPI_INT, big, 1, MPI_INT, -2, w), MPI_ERR_ROOT);
    EXPECT(MPI_Scatterv(big, cnt, dsp, MPI_INT, y, 1, MPI_INT, size, w), MPI_ERR_ROOT);
    EXPECT(MPI_Igatherv(x, 1, MPI_INT, big, cnt, dsp, MPI_INT, size + 1, w, &r), MPI_ERR_ROOT);
    /* op */
    EXPECT(MPI_Allreduce(x, y, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);
    EXPECT(MPI_Allreduce(x, y, 1, MPI_DOUBLE, MPI_BAND, w), MPI_ERR_OP);
    EXPECT(MPI_Reduce(x, y, 1, MPI_FLOAT, MPI_MAXLOC, 0, w), MPI_ERR_OP);
    EXPECT(MPI_Scan(x, y, 1, MPI_INT, (MPI_Op)0x7777, w), MPI_ERR_OP);
    EXPECT(MPI_Reduce_scatter_block(big, y, 1, MPI_INT, MPI_REPLACE, w), MPI_ERR_OP);
    /* count */
    EXPECT(MPI_Bcast(x, -1, MPI_INT, 0, w), MPI_ERR_COUNT);
    EXPECT(MPI_Allreduce(x, y, -3, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    EXPECT(MPI_Allgather(x, -1, MPI_INT, big, 1, MPI_INT, w), MPI_ERR_COUNT);
    cnt[0] = -1;
    EXPECT(MPI_Allgatherv(x, 1, MPI_INT, big, cnt, dsp, MPI_INT, w), MPI_ERR_COUNT);
    cnt[0] = 1;
    EXPECT(MPI_Ireduce_scatter_block(big, y, -1, MPI_INT, MPI_SUM, w, &r), MPI_ERR_COUNT);
    /* datatype */
    EXPECT(MPI_Bcast(x, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE);
    EXPECT(MPI_Allreduce(x, y, 1, (MPI_Datatype)0x5555, MPI_SUM, w), MPI_ERR_TYPE);
    EXPECT(MPI_Alltoall(big, 1, MPI_INT, big, 1, MPI_DATATYPE_NULL, w), MPI_ERR_TYPE);
    EXPECT(MPI_Iscan(x, y, 1, MPI_DATATYPE_NULL, MPI_SUM, w, &r), MPI_ERR_TYPE);
    /* communicator: NULL, freed, a handle of another kind */
    MPI_Comm gone;
    MPI_Comm_dup(w, &gone);
    MPI_Comm stale = gone;
    MPI_Comm_free(&gone);
    EXPECT(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Bcast(x, 1, MPI_INT, 0, MPI_COMM_NULL), MPI_ERR_COMM);
    EXPECT(MPI_Allreduce(x, y, 1, MPI_INT, MPI_SUM, stale), MPI_ERR_COMM);
    EXPECT(MPI_Ibarrier((MPI_Comm)MPI_INT, &r), MPI_ERR_COMM);
    /* buffer: NULL with data, MPI_IN_PLACE where the standard forbids it */
    EXPECT(MPI_Bcast(NULL, 1, MPI_INT, 0, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Allreduce(x, NULL, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Bcast(MPI_IN_PLACE, 1, MPI_INT, 0, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Allreduce(x, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Alltoall(big, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w), MPI_ERR_BUFFER);
    EXPECT(MPI_Allgather(x, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w), MPI_ERR_BUFFER);
    if (size == 1) {
        /* The one rank is the root: these are "in place at a non-root" only with more ranks. */
        EXPECT(MPI_Reduce(MPI_IN_PLACE, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, 0, w), MPI_ERR_BUFFER);
    }
    /* request pointer */
    rc = MPI_Ibcast(x, 1, MPI_INT, 0, w, NULL);
    CHECK(cls(rc) == MPI_ERR_REQUEST || cls(rc) == MPI_ERR_ARG, "ibcast NULL request: class %d",
          cls(rc));
    /* Zero counts with NULL buffers are fine. */
    EXPECT(MPI_Bcast(NULL, 0, MPI_INT, 0, w), MPI_SUCCESS);
    EXPECT(MPI_Allreduce(NULL, NULL, 0, MPI_INT, MPI_SUM, w), MPI_SUCCESS);

    /* Nobody consumed a collective sequence number on a refused call: still in step. */
    int s = 0;
    MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, w);
    CHECK(s == size * (size - 1) / 2, "allreduce after the errors: %d", s);
    s = -1;
    MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_MAX, dup);
    CHECK(s == size - 1, "allreduce on dup after the errors: %d", s);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&dup);
    free(big);
    free(cnt);
    free(dsp);
    return finish();
}
