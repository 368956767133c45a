/* Generalized requests: query_fn fills the status at completion (once), free_fn runs after it
 * (or at MPI_Request_free / MPI_Grequest_complete after a free), cancel_fn gets the
 * completion state and may complete the request; Test, Waitall with point-to-point requests,
 * Request_get_status, and a query_fn error reaching MPI_Wait. */
#include "coll_util.h"

typedef struct {
    int queries, frees, cancels, cancelled, fail;
    int last_complete_flag;
} state_t;

static int query_fn(void *extra, MPI_Status *st) {
    state_t *s = extra;
    s->queries++;
    MPI_Status_set_source(st, 42);
    MPI_Status_set_tag(st, 7);
    MPI_Status_set_elements(st, MPI_INT, 3);
    MPI_Status_set_cancelled(st, s->cancelled);
    return s->fail ? MPI_ERR_OTHER : MPI_SUCCESS;
}

static int free_fn(void *extra) {
    ((state_t *)extra)->frees++;
    return MPI_SUCCESS;
}

static MPI_Request to_complete;

static int cancel_fn(void *extra, int complete) {
    state_t *s = extra;
    s->cancels++;
    s->last_complete_flag = complete;
    if (!complete) {
        s->cancelled = 1;
        MPI_Grequest_complete(to_complete);
    }
    return MPI_SUCCESS;
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Request req;
    MPI_Status st;
    int flag, count;

    /* start, test (not done), complete, wait */
    state_t a = {0};
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &a, &req);
    MPI_Test(&req, &flag, &st);
    CHECK(!flag && a.queries == 0, "incomplete: flag %d queries %d", flag, a.queries);
    MPI_Grequest_complete(req);
    MPI_Wait(&req, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(req == MPI_REQUEST_NULL, "handle freed");
    CHECK(a.queries == 1 && a.frees == 1, "queries %d frees %d", a.queries, a.frees);
    CHECK(st.MPI_SOURCE == 42 && st.MPI_TAG == 7 && count == 3, "status %d %d %d", st.MPI_SOURCE,
          st.MPI_TAG, count);

    /* Request_get_status queries without freeing; Test then retires */
    state_t b = {0};
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &b, &req);
    MPI_Grequest_complete(req);
    MPI_Request_get_status(req, &flag, &st);
    CHECK(flag && b.queries == 1 && b.frees == 0 && req != MPI_REQUEST_NULL, "get_status");
    MPI_Test(&req, &flag, &st);
    CHECK(flag && b.queries == 2 && b.frees == 1 && req == MPI_REQUEST_NULL, "test retires");

    /* cancel before completion: cancel_fn completes it; the status says cancelled */
    state_t c = {0};
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &c, &req);
    to_complete = req;
    MPI_Cancel(&req);
    CHECK(c.cancels == 1 && c.last_complete_flag == 0, "cancel_fn");
    MPI_Wait(&req, &st);
    MPI_Test_cancelled(&st, &flag);
    CHECK(flag && c.frees == 1, "cancelled %d frees %d", flag, c.frees);

    /* freed before completion: free_fn runs at MPI_Grequest_complete, query_fn never */
    state_t d = {0};
    MPI_Request keep;
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &d, &req);
    keep = req;
    MPI_Request_free(&req);
    CHECK(req == MPI_REQUEST_NULL && d.frees == 0, "free before complete");
    MPI_Grequest_complete(keep);
    CHECK(d.frees == 1 && d.queries == 0, "free_fn at complete: frees %d queries %d", d.frees,
          d.queries);

    /* Waitall: a generalized request among point-to-point ones */
    state_t e = {0};
    int out = rank, in = -1;
    int peer = (rank + 1) % size, from = (rank + size - 1) % size;
    MPI_Request reqs[3];
    MPI_Grequest_start(query_fn, free_fn, NULL, &e, &reqs[1]);
    MPI_Irecv(&in, 1, MPI_INT, from, 3, MPI_COMM_WORLD, &reqs[0]);
    MPI_Isend(&out, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, &reqs[2]);
    MPI_Grequest_complete(reqs[1]);
    MPI_Status sts[3];
    MPI_Waitall(3, reqs, sts);
    CHECK(in == from && e.queries == 1 && e.frees == 1 && sts[1].MPI_SOURCE == 42,
          "waitall: in %d queries %d", in, e.queries);

    /* query_fn's error is the completion's error */
    state_t f = {0};
    f.fail = 1;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Grequest_start(query_fn, free_fn, cancel_fn, &f, &req);
    MPI_Grequest_complete(req);
    int rc = MPI_Wait(&req, &st), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_OTHER && f.frees == 1, "query error: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return finish();
}
