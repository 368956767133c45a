/* Gather(v), Scatter(v), Allgather(v) and their I- forms: every root, MPI_IN_PLACE, zero
 * counts, uneven counts with gaps, large blocks. */
#include "coll_util.h"

static void gather_scatter(int n, int root) {
    int *snd = xmalloc(n * sizeof(int)), *all = xmalloc((size_t)n * size * sizeof(int));
    for (int i = 0; i < n; i++)
        snd[i] = rank * 100000 + i;
    for (int i = 0; i < n * size; i++)
        all[i] = -1;
    MPI_Gather(snd, n, MPI_INT, all, n, MPI_INT, root, MPI_COMM_WORLD);
    if (rank == root) {
        int bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                bad += all[r * n + i] != r * 100000 + i;
        CHECK(bad == 0, "gather n=%d root=%d: %d wrong", n, root, bad);
    }
    /* In place at the root: its block is already there. */
    if (rank == root) {
        for (int i = 0; i < n * size; i++)
            all[i] = -1;
        for (int i = 0; i < n; i++)
            all[root * n + i] = snd[i];
        MPI_Gather(MPI_IN_PLACE, n, MPI_INT, all, n, MPI_INT, root, MPI_COMM_WORLD);
        int bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < n; i++)
                bad += all[r * n + i] != r * 100000 + i;
        CHECK(bad == 0, "gather in place n=%d: %d wrong", n, bad);
    } else {
        MPI_Gather(snd, n, MPI_INT, NULL, 0, MPI_DATATYPE_NULL, root, MPI_COMM_WORLD);
    }
    /* Scatter it back. */
    for (int i = 0; i < n; i++)
        snd[i] = -1;
    MPI_Request req;
    MPI_Iscatter(all, n, MPI_INT, snd, n, MPI_INT, root, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
        CHECK(snd[i] == rank * 100000 + i, "scatter n=%d [%d]=%d", n, i, snd[i]);
    if (rank == root)
        MPI_Scatter(all, n, MPI_INT, MPI_IN_PLACE, n, MPI_INT, root, MPI_COMM_WORLD);
    else
        MPI_Scatter(NULL, 0, MPI_INT, snd, n, MPI_INT, root, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++)
        CHECK(snd[i] == rank * 100000 + i, "scatter in place n=%d", n);
    /* Allgather, and in place. */
    for (int i = 0; i < n * size; i++)
        all[i] = -1;
    MPI_Allgather(snd, n, MPI_INT, all, n, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < n; i++)
            bad += all[r * n + i] != r * 100000 + i;
    CHECK(bad == 0, "allgather n=%d: %d wrong", n, bad);
    for (int i = 0; i < n * size; i++)
        all[i] = (i / (n ? n : 1)) == rank ? all[i] : -1;
    MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, n, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < n; i++)
            bad += all[r * n + i] != r * 100000 + i;
    CHECK(bad == 0, "allgather in place n=%d: %d wrong", n, bad);
    free(snd);
    free(all);
}

/* Rank r contributes r+1 doubles (rank 1: none), placed with a gap of 2 between blocks. */
static void vector_forms(int root) {
    int *counts = xmalloc(size * sizeof(int)), *displs = xmalloc(size * sizeof(int));
    int total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r == 1 ? 0 : r + 1;
        displs[r] = total;
        total += counts[r] + 2;
    }
    double *mine = xmalloc((rank + 1) * sizeof(double)), *all = xmalloc(total * sizeof(double));
    for (int i = 0; i < counts[rank]; i++)
        mine[i] = rank + i / 10.0;
    for (int i = 0; i < total; i++)
        all[i] = -7;
    MPI_Gatherv(mine, counts[rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, root, MPI_COMM_WORLD);
    if (rank == root) {
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < counts[r]; i++)
                CHECK(all[displs[r] + i] == r + i / 10.0, "gatherv r=%d i=%d", r, i);
            CHECK(all[displs[r] + counts[r]] == -7, "gatherv wrote into a gap");
        }
    }
    for (int i = 0; i < counts[rank]; i++)
        mine[i] = 0;
    MPI_Scatterv(all, counts, displs, MPI_DOUBLE, mine, counts[rank], MPI_DOUBLE, root, MPI_COMM_WORLD);
    for (int i = 0; i < counts[rank]; i++)
        CHECK(mine[i] == rank + i / 10.0, "scatterv i=%d", i);
    for (int i = 0; i < total; i++)
        all[i] = -7;
    MPI_Request req;
    MPI_Iallgatherv(mine, counts[rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    for (int r = 0; r < size; r++) {
        for (int i = 0; i < counts[r]; i++)
            CHECK(all[displs[r] + i] == r + i / 10.0, "allgatherv r=%d i=%d", r, i);
        CHECK(all[displs[r] + counts[r]] == -7, "allgatherv wrote into a gap");
    }
    MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < counts[r]; i++)
            CHECK(all[displs[r] + i] == r + i / 10.0, "allgatherv in place r=%d i=%d", r, i);
    free(counts);
    free(displs);
    free(mine);
    free(all);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    for (int root = 0; root < size; root++) {
        gather_scatter(0, root);
        gather_scatter(3, root);
        vector_forms(root);
    }
    gather_scatter(300000 / size, size - 1); /* about 1.2 MB gathered: the ring allgather */
    return finish();
}
