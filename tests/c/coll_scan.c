/* Scan, Exscan, Reduce_scatter, Reduce_scatter_block and their I- forms, MPI_IN_PLACE,
 * zero counts, large vectors. */
#include "coll_util.h"

static void scans(int n) {
    int *in = xmalloc(n * sizeof(int)), *out = xmalloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        in[i] = rank + 1 + i;
    MPI_Scan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += out[i] != (rank + 1) * (rank + 2) / 2 + (rank + 1) * i;
    CHECK(bad == 0, "scan n=%d: %d wrong", n, bad);
    for (int i = 0; i < n; i++)
        out[i] = rank + 1 + i;
    MPI_Request req;
    MPI_Iscan(MPI_IN_PLACE, out, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += out[i] != rank + 1 + i;
    CHECK(bad == 0, "scan in place max n=%d: %d wrong", n, bad);
    for (int i = 0; i < n; i++)
        out[i] = -5;
    MPI_Exscan(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += rank == 0 ? out[i] != -5 : out[i] != rank * (rank + 1) / 2 + rank * i;
    CHECK(bad == 0, "exscan n=%d: %d wrong", n, bad);
    for (int i = 0; i < n; i++)
        out[i] = rank + 1 + i;
    MPI_Iexscan(MPI_IN_PLACE, out, n, MPI_INT, MPI_PROD, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    if (rank > 0 && n > 0) {
        long long e = 1;
        for (int r = 0; r < rank; r++)
            e *= r + 1;
        CHECK(out[0] == (int)e, "exscan in place prod %d != %lld", out[0], e);
    }
    free(in);
    free(out);
}

static void reduce_scatters(int per) {
    int n = per * size;
    long *in = xmalloc(n * sizeof(long)), *out = xmalloc(n * sizeof(long));
    for (int i = 0; i < n; i++)
        in[i] = rank * 3 + i;
    MPI_Reduce_scatter_block(in, out, per, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < per; i++)
        bad += out[i] != 3L * size * (size - 1) / 2 + (long)size * (rank * per + i);
    CHECK(bad == 0, "reduce_scatter_block per=%d: %d wrong", per, bad);
    /* Uneven counts: rank r gets r % 3 * per / 2 elements. */
    int *counts = xmalloc(size * sizeof(int)), total = 0, off = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = (r % 3) * per / 2;
        if (r < rank)
            off += counts[r];
        total += counts[r];
    }
    for (int i = 0; i < total; i++)
        out[i] = in[i];
    MPI_Request req;
    MPI_Ireduce_scatter(MPI_IN_PLACE, out, counts, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad = 0;
    for (int i = 0; i < counts[rank]; i++)
        bad += out[i] != 3L * size * (size - 1) / 2 + (long)size * (off + i);
    CHECK(bad == 0, "reduce_scatter in place per=%d: %d wrong", per, bad);
    MPI_Reduce_scatter(in, out, counts, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < counts[rank]; i++)
        bad += out[i] != 3L * (size - 1) + off + i;
    CHECK(bad == 0, "reduce_scatter max per=%d: %d wrong", per, bad);
    free(counts);
    free(in);
    free(out);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    scans(0);
    scans(1);
    scans(37);
    scans(300000);
    reduce_scatters(0);
    reduce_scatters(1);
    reduce_scatters(10);
    reduce_scatters(140000 / size + 1);
    return finish();
}
