/* MPI_Comm_dup: congruent, isolated traffic (same tags on WORLD and the dup never cross),
 * names, inherited error handler, free, and error classes for bad communicator arguments;
 * MPI_Comm_idup(_with_info) and MPI_Topo_test (MPI_UNDEFINED: no topologies yet). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int rank, size, result, len, flag;
    MPI_Comm dup, dup2;
    MPI_Errhandler eh;
    char name[MPI_MAX_OBJECT_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &dup) == MPI_SUCCESS, "dup failed");
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result);
    CHECK(result == MPI_IDENT, "WORLD vs WORLD: %d", result);
    MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
    CHECK(result == MPI_CONGRUENT, "WORLD vs dup: %d", result);
    {
        int r, s;
        MPI_Comm_rank(dup, &r);
        MPI_Comm_size(dup, &s);
        CHECK(r == rank && s == size, "dup rank %d size %d", r, s);
    }
    MPI_Comm_get_errhandler(dup, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "dup did not inherit MPI_ERRORS_RETURN");
    MPI_Comm_test_inter(dup, &flag);
    CHECK(flag == 0, "dup is an intercommunicator?");

    /* Names */
    MPI_Comm_get_name(MPI_COMM_WORLD, name, &len);
    CHECK(strcmp(name, "MPI_COMM_WORLD") == 0 && len == 14, "WORLD name '%s'", name);
    MPI_Comm_get_name(dup, name, &len);
    CHECK(len == 0 && name[0] == 0, "dup name '%s'", name);
    MPI_Comm_set_name(dup, "my dup");
    MPI_Comm_get_name(dup, name, &len);
    CHECK(strcmp(name, "my dup") == 0 && len == 6, "dup name '%s'", name);

    /* Same tag, same peers, on both: the messages must not cross. Send on the dup first,
     * receive on WORLD first (also with wildcards). Repeated to exercise the queues. */
    for (int iter = 0; iter < 20; iter++) {
        int to = (rank + 1) % size, from = (rank + size - 1) % size;
        int a = 1000 + rank, b = 2000 + rank, got_w = -1, got_d = -1;
        MPI_Request rq[2];
        MPI_Status st;
        MPI_Isend(&a, 1, MPI_INT, to, 7, dup, &rq[0]);
        MPI_Isend(&b, 1, MPI_INT, to, 7, MPI_COMM_WORLD, &rq[1]);
        if (iter % 2)
            MPI_Recv(&got_w, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        else
            MPI_Recv(&got_w, 1, MPI_INT, from, 7, MPI_COMM_WORLD, &st);
        MPI_Recv(&got_d, 1, MPI_INT, from, 7, dup, &st);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        CHECK(got_w == 2000 + from, "WORLD got %d", got_w);
        CHECK(got_d == 1000 + from, "dup got %d", got_d);
    }
    MPI_Barrier(dup);

    /* A dup of a dup, freed in the other order. */
    MPI_Comm_dup(dup, &dup2);
    MPI_Comm_compare(dup, dup2, &result);
    CHECK(result == MPI_CONGRUENT, "dup vs dup2: %d", result);
    CHECK(MPI_Comm_free(&dup) == MPI_SUCCESS, "free dup");
    CHECK(dup == MPI_COMM_NULL, "free did not set MPI_COMM_NULL");
    MPI_Barrier(dup2);
    MPI_Comm_free(&dup2);

    /* Bad communicator arguments. */
    {
        MPI_Comm world = MPI_COMM_WORLD, self = MPI_COMM_SELF, stale, keep;
        int x = 0, rc;
        MPI_Comm_dup(MPI_COMM_WORLD, &stale);
        keep = stale;
        MPI_Comm_free(&stale);
        rc = MPI_Comm_free(&world);
        CHECK(rc == MPI_ERR_COMM && world == MPI_COMM_WORLD, "free WORLD: %d", rc);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        rc = MPI_Comm_free(&self);
        CHECK(rc == MPI_ERR_COMM, "free SELF: %d", rc);
        rc = MPI_Send(&x, 1, MPI_INT, 0, 0, keep);
        CHECK(rc == MPI_ERR_COMM, "send on a freed communicator: %d", rc);
        rc = MPI_Comm_dup(MPI_COMM_NULL, &stale);
        CHECK(rc == MPI_ERR_COMM, "dup of MPI_COMM_NULL: %d", rc);
        rc = MPI_Comm_size(MPI_COMM_NULL, &x);
        CHECK(rc == MPI_ERR_COMM, "size of MPI_COMM_NULL: %d", rc);
        rc = MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_NULL, &x);
        CHECK(rc == MPI_ERR_COMM, "compare with MPI_COMM_NULL: %d", rc);
    }
    MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &result);
    CHECK(result == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL), "WORLD vs SELF: %d", result);

    MPI_Barrier(MPI_COMM_WORLD);
    /* MPI_Comm_idup(_with_info): a congruent duplicate once the request has completed. */
    {
        MPI_Request req = MPI_REQUEST_NULL;
        int sum = 0, one = 1, topo = 0;
        CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req) == MPI_SUCCESS, "idup failed");
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && req == MPI_REQUEST_NULL, "idup wait");
        MPI_Comm_compare(MPI_COMM_WORLD, dup, &result);
        CHECK(result == MPI_CONGRUENT, "idup: compare %d", result);
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup);
        CHECK(sum == size, "allreduce on the idup: %d", sum);
        MPI_Comm_free(&dup);
        flag = 0;
        CHECK(MPI_Comm_idup_with_info(MPI_COMM_SELF, MPI_INFO_NULL, &dup, &req) == MPI_SUCCESS, "idup_with_info failed");
        CHECK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag, "idup_with_info test");
        MPI_Comm_compare(MPI_COMM_SELF, dup, &result);
        CHECK(result == MPI_CONGRUENT, "idup_with_info: compare %d", result);
        MPI_Comm_free(&dup);
        CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &dup, NULL) == MPI_ERR_ARG, "idup NULL request");
        CHECK(MPI_Comm_idup(MPI_COMM_NULL, &dup, &req) == MPI_ERR_COMM, "idup of MPI_COMM_NULL");

        /* MPI_Topo_test: no communicator has a topology yet. */
        CHECK(MPI_Topo_test(MPI_COMM_WORLD, &topo) == MPI_SUCCESS && topo == MPI_UNDEFINED, "topo_test world %d", topo);
        MPI_Comm_dup(MPI_COMM_SELF, &dup);
        CHECK(MPI_Topo_test(dup, &topo) == MPI_SUCCESS && topo == MPI_UNDEFINED, "topo_test dup %d", topo);
        MPI_Comm_free(&dup);
        CHECK(MPI_Topo_test(MPI_COMM_NULL, &topo) == MPI_ERR_COMM, "topo_test of MPI_COMM_NULL");
    }

    if (rank == 0 && errs == 0) printf(" No Errors\n");
    MPI_Finalize();
    return errs != 0;
}
