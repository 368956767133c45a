/* MPI_Isendrecv and MPI_Isendrecv_replace (and their _c forms): a ring exchange at every size
 * (eager and rendezvous lengths), several outstanding at once completed by Waitall, statuses
 * (source, tag, count), MPI_PROC_NULL, the replace buffer left alone until completion, and a bad
 * send tag refused before anything starts. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs = 0, rank, size;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int lens[] = {0, 1, 100, 5000, 300000};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    for (int li = 0; li < 5; li++) {
        int n = lens[li];
        int *out = malloc((n + 1) * sizeof(int)), *in = malloc((n + 1) * sizeof(int));
        int *rep = malloc((n + 1) * sizeof(int));
        for (int i = 0; i < n; i++) { out[i] = rank * 1000003 + i; in[i] = -1; rep[i] = rank * 7 + i; }
        MPI_Request req[3];
        MPI_Status st[3];
        MPI_Isendrecv(out, n, MPI_INT, right, 10 + li, in, n, MPI_INT, left, 10 + li, MPI_COMM_WORLD, &req[0]);
        MPI_Isendrecv_replace(rep, n, MPI_INT, right, 20 + li, left, 20 + li, MPI_COMM_WORLD, &req[1]);
        /* PROC_NULL both ways: completes at once with an empty status from PROC_NULL. */
        MPI_Isendrecv_c(out, (MPI_Count)n, MPI_INT, MPI_PROC_NULL, 1, in, 0, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &req[2]);
        CHECK(MPI_Waitall(3, req, st) == MPI_SUCCESS, "waitall");
        int cnt;
        MPI_Get_count(&st[0], MPI_INT, &cnt);
        CHECK(st[0].MPI_SOURCE == left && st[0].MPI_TAG == 10 + li && cnt == n,
              "isendrecv status: source %d tag %d count %d (n %d)", st[0].MPI_SOURCE, st[0].MPI_TAG, cnt, n);
        MPI_Get_count(&st[1], MPI_INT, &cnt);
        CHECK(st[1].MPI_SOURCE == left && st[1].MPI_TAG == 20 + li && cnt == n, "replace status");
        CHECK(st[2].MPI_SOURCE == MPI_PROC_NULL, "PROC_NULL status source %d", st[2].MPI_SOURCE);
        for (int i = 0; i < n; i++) {
            if (in[i] != left * 1000003 + i) { CHECK(0, "isendrecv data [%d] = %d", i, in[i]); break; }
            if (rep[i] != left * 7 + i) { CHECK(0, "replace data [%d] = %d", i, rep[i]); break; }
        }

        /* The _c replace form, completed by MPI_Test in a loop. */
        for (int i = 0; i < n; i++) rep[i] = -rank - i;
        MPI_Request r;
        int done = 0;
        MPI_Isendrecv_replace_c(rep, (MPI_Count)n, MPI_INT, left, 30, right, 30, MPI_COMM_WORLD, &r);
        while (!done) MPI_Test(&r, &done, &st[0]);
        for (int i = 0; i < n; i++)
            if (rep[i] != -right - i) { CHECK(0, "replace_c data [%d] = %d", i, rep[i]); break; }
        free(out); free(in); free(rep);
    }

    /* A bad send tag fails at once and leaves nothing posted: the next exchange is intact. */
    {
        int a = rank, b = -1, rc;
        MPI_Request r = MPI_REQUEST_NULL;
        rc = MPI_Isendrecv(&a, 1, MPI_INT, right, -5, &b, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &r);
        int cls;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_TAG, "bad send tag: class %d", cls);
        rc = MPI_Isendrecv(&a, 1, MPI_INT, size, 0, &b, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &r);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RANK, "bad dest: class %d", cls);
        MPI_Isendrecv(&a, 1, MPI_INT, right, 0, &b, 1, MPI_INT, left, 0, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(b == left, "exchange after the refused ones: %d", b);
    }

    MPI_Allreduce(MPI_IN_PLACE, &errs, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (errs) printf(" Found %d errors\n", errs);
        else printf(" No Errors\n");
    }
    MPI_Finalize();
    return 0;
}
