/* Group calls: size/rank, incl/excl/ranges, set operations, translate, compare, the
 * predefined groups, and bad arguments with MPI_ERRORS_RETURN. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int rank, size, n, r, result, rc;
    MPI_Group world, first, last, u, in, diff, g, self;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_size(world, &n);
    MPI_Group_rank(world, &r);
    CHECK(n == size && r == rank, "world group size %d rank %d", n, r);

    /* first = ranks [0, h), last = [h/2, size) with h = (size+1)/2: they overlap at size >= 3. */
    int h = (size + 1) / 2;
    {
        int range[1][3] = {{0, h - 1, 1}};
        MPI_Group_range_incl(world, 1, range, &first);
        int *ex = malloc(sizeof(int) * size), m = 0;
        for (int i = 0; i < h / 2; i++) ex[m++] = i;
        MPI_Group_excl(world, m, ex, &last);
        free(ex);
    }
    MPI_Group_size(first, &n);
    CHECK(n == h, "first size %d", n);
    MPI_Group_size(last, &n);
    CHECK(n == size - h / 2, "last size %d", n);
    MPI_Group_rank(first, &r);
    CHECK(r == (rank < h ? rank : MPI_UNDEFINED), "rank in first %d", r);

    MPI_Group_union(first, last, &u);
    MPI_Group_compare(u, world, &result);
    CHECK(result == MPI_IDENT, "first U last vs world: %d", result);
    MPI_Group_intersection(first, last, &in);
    MPI_Group_size(in, &n);
    CHECK(n == h - h / 2, "intersection size %d", n);
    MPI_Group_difference(world, first, &diff);
    MPI_Group_size(diff, &n);
    CHECK(n == size - h, "difference size %d", n);
    MPI_Group_difference(first, first, &g);
    CHECK(g == MPI_GROUP_EMPTY, "first - first is not MPI_GROUP_EMPTY");
    MPI_Group_size(MPI_GROUP_EMPTY, &n);
    CHECK(n == 0, "MPI_GROUP_EMPTY size %d", n);
    MPI_Group_rank(MPI_GROUP_EMPTY, &r);
    CHECK(r == MPI_UNDEFINED, "rank in MPI_GROUP_EMPTY %d", r);

    /* Translate: world ranks into `first`; those beyond h are undefined. */
    {
        int *a = malloc(sizeof(int) * size), *b = malloc(sizeof(int) * size);
        for (int i = 0; i < size; i++) a[i] = i;
        MPI_Group_translate_ranks(world, size, a, first, b);
        for (int i = 0; i < size; i++)
            CHECK(b[i] == (i < h ? i : MPI_UNDEFINED), "translate %d -> %d", i, b[i]);
        a[0] = MPI_PROC_NULL;
        MPI_Group_translate_ranks(world, 1, a, first, b);
        CHECK(b[0] == MPI_PROC_NULL, "PROC_NULL -> %d", b[0]);
        free(a);
        free(b);
    }

    /* Reversed order: similar, not identical. */
    {
        int range[1][3] = {{size - 1, 0, -1}};
        MPI_Group rev;
        MPI_Group_range_incl(world, 1, range, &rev);
        MPI_Group_compare(world, rev, &result);
        CHECK(result == (size == 1 ? MPI_IDENT : MPI_SIMILAR), "world vs reversed: %d", result);
        MPI_Group_range_excl(world, 1, range, &g);
        CHECK(g == MPI_GROUP_EMPTY, "excluding everyone is not MPI_GROUP_EMPTY");
        MPI_Group_free(&rev);
    }
    MPI_Comm_group(MPI_COMM_SELF, &self);
    MPI_Group_compare(self, world, &result);
    CHECK(result == (size == 1 ? MPI_IDENT : MPI_UNEQUAL), "self vs world: %d", result);

    /* Bad arguments. */
    {
        int bad[2] = {0, 0}, out;
        MPI_Group x;
        rc = MPI_Group_incl(world, 1, (int[]){size}, &x);
        CHECK(rc == MPI_ERR_RANK, "incl rank size: %d", rc);
        rc = MPI_Group_incl(world, 2, bad, &x);
        CHECK(rc == MPI_ERR_RANK, "incl a rank twice: %d", rc);
        rc = MPI_Group_excl(world, 1, (int[]){-1}, &x);
        CHECK(rc == MPI_ERR_RANK, "excl rank -1: %d", rc);
        rc = MPI_Group_size(MPI_GROUP_NULL, &out);
        CHECK(rc == MPI_ERR_GROUP, "size of MPI_GROUP_NULL: %d", rc);
        rc = MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &(MPI_Comm){0});
        CHECK(rc == MPI_ERR_GROUP, "create with MPI_GROUP_NULL: %d", rc);
        MPI_Group freed;
        MPI_Group_union(world, world, &freed);
        MPI_Group stale = freed;
        MPI_Group_free(&freed);
        CHECK(freed == MPI_GROUP_NULL, "free did not set MPI_GROUP_NULL");
        rc = MPI_Group_size(stale, &out);
        CHECK(rc == MPI_ERR_GROUP, "size of a freed group: %d", rc);
        rc = MPI_Group_translate_ranks(world, 1, (int[]){size + 3}, first, &out);
        CHECK(rc == MPI_ERR_RANK, "translate a bad rank: %d", rc);
    }

    /* Many groups: the table reuses slots. */
    for (int i = 0; i < 1000; i++) {
        MPI_Group t;
        MPI_Comm_group(MPI_COMM_WORLD, &t);
        MPI_Group_free(&t);
    }

    MPI_Group_free(&g);
    MPI_Group_free(&self);
    MPI_Group_free(&diff);
    MPI_Group_free(&in);
    MPI_Group_free(&u);
    MPI_Group_free(&last);
    MPI_Group_free(&first);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    MPI_Finalize();
    return errs != 0;
}
