/* MPI_Status_get_source, _tag and _error (MPI 4.1): they read what a receive, MPI_Status_set_*
 * or a completion wrote into the status, and a NULL pointer is MPI_ERR_ARG, not a crash. */
#include <mpi.h>
#include <stdio.h>

static int errs = 0, rank = -1;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int size, source = -7, tag = -7, error = -7, class = -1, rc, x = 0;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* What the setters wrote. */
    MPI_Status_set_source(&st, 5);
    MPI_Status_set_tag(&st, 77);
    MPI_Status_set_error(&st, MPI_ERR_OTHER);
    CHECK(MPI_Status_get_source(&st, &source) == MPI_SUCCESS && source == 5, "source %d", source);
    CHECK(MPI_Status_get_tag(&st, &tag) == MPI_SUCCESS && tag == 77, "tag %d", tag);
    CHECK(MPI_Status_get_error(&st, &error) == MPI_SUCCESS && error == MPI_ERR_OTHER, "error %d", error);
    CHECK(PMPI_Status_get_tag(&st, &tag) == MPI_SUCCESS && tag == 77, "PMPI tag %d", tag);

    /* What a receive wrote: each rank gets a message from its left neighbour. */
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Sendrecv(&rank, 1, MPI_INT, right, 100 + rank, &x, 1, MPI_INT, MPI_ANY_SOURCE,
                 MPI_ANY_TAG, MPI_COMM_WORLD, &st);
    MPI_Status_get_source(&st, &source);
    MPI_Status_get_tag(&st, &tag);
    CHECK(x == left && source == left && tag == 100 + left, "got %d from %d tag %d", x, source, tag);

    /* A receive from MPI_PROC_NULL: the empty status. */
    MPI_Recv(&x, 1, MPI_INT, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st);
    MPI_Status_get_source(&st, &source);
    MPI_Status_get_tag(&st, &tag);
    CHECK(source == MPI_PROC_NULL && tag == MPI_ANY_TAG, "proc null: source %d tag %d", source, tag);

    /* NULL pointers: MPI_ERR_ARG through the handler of MPI_COMM_WORLD. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Status_get_source(NULL, &source);
    MPI_Error_class(rc, &class);
    CHECK(class == MPI_ERR_ARG, "NULL status: rc %d class %d", rc, class);
    rc = MPI_Status_get_error(&st, NULL);
    MPI_Error_class(rc, &class);
    CHECK(class == MPI_ERR_ARG, "NULL output: rc %d class %d", rc, class);

    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return 0;
}
