/* Alltoall, Alltoallv, Alltoallw and their I- forms: zero counts, MPI_IN_PLACE, uneven
 * blocks, large blocks (pairwise rounds). */
#include "coll_util.h"

static int val(int from, int to, int i) { return from * 1000000 + to * 1000 + i % 1000; }

static void uniform(int n) {
    int *s = xmalloc((size_t)n * size * sizeof(int)), *r = xmalloc((size_t)n * size * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            s[p * n + i] = val(rank, p, i);
    memset(r, 0xff, (size_t)n * size * sizeof(int));
    MPI_Alltoall(s, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            bad += r[p * n + i] != val(p, rank, i);
    CHECK(bad == 0, "alltoall n=%d: %d wrong", n, bad);
    /* In place, non-blocking. */
    memcpy(r, s, (size_t)n * size * sizeof(int));
    MPI_Request req;
    MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, r, n, MPI_INT, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < n; i++)
            bad += r[p * n + i] != val(p, rank, i);
    CHECK(bad == 0, "alltoall in place n=%d: %d wrong", n, bad);
    free(s);
    free(r);
}

/* Rank a sends (a + b) % 3 ints to rank b, blocks in reverse order with gaps. */
static void vector(int scale) {
    int *sc = xmalloc(size * sizeof(int)), *sd = xmalloc(size * sizeof(int));
    int *rc = xmalloc(size * sizeof(int)), *rd = xmalloc(size * sizeof(int));
    int st = 0, rt = 0;
    for (int p = size - 1; p >= 0; p--) {
        sc[p] = ((rank + p) % 3) * scale;
        sd[p] = st;
        st += sc[p] + 1;
    }
    for (int p = 0; p < size; p++) {
        rc[p] = ((rank + p) % 3) * scale;
        rd[p] = rt;
        rt += rc[p] + 1;
    }
    int *s = xmalloc(st * sizeof(int)), *r = xmalloc(rt * sizeof(int));
    for (int p = 0; p < size; p++)
        for (int i = 0; i < sc[p]; i++)
            s[sd[p] + i] = val(rank, p, i);
    for (int i = 0; i < rt; i++)
        r[i] = -1;
    MPI_Alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    int bad = 0;
    for (int p = 0; p < size; p++) {
        for (int i = 0; i < rc[p]; i++)
            bad += r[rd[p] + i] != val(p, rank, i);
        bad += r[rd[p] + rc[p]] != -1;
    }
    CHECK(bad == 0, "alltoallv scale=%d: %d wrong", scale, bad);
    /* Alltoallw with byte displacements, same layout. */
    MPI_Datatype *types = xmalloc(size * sizeof(MPI_Datatype));
    int *sdb = xmalloc(size * sizeof(int)), *rdb = xmalloc(size * sizeof(int));
    for (int p = 0; p < size; p++) {
        types[p] = MPI_INT;
        sdb[p] = sd[p] * 4;
        rdb[p] = rd[p] * 4;
    }
    for (int i = 0; i < rt; i++)
        r[i] = -1;
    MPI_Request req;
    MPI_Ialltoallw(s, sc, sdb, types, r, rc, rdb, types, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < rc[p]; i++)
            bad += r[rd[p] + i] != val(p, rank, i);
    CHECK(bad == 0, "alltoallw scale=%d: %d wrong", scale, bad);
    /* Alltoallv in place: send layout = receive layout. Rank a sends b the values for (a,b). */
    for (int p = 0; p < size; p++)
        for (int i = 0; i < rc[p]; i++)
            r[rd[p] + i] = val(rank, p, i);
    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
    bad = 0;
    for (int p = 0; p < size; p++)
        for (int i = 0; i < rc[p]; i++)
            bad += r[rd[p] + i] != val(p, rank, i);
    CHECK(bad == 0, "alltoallv in place scale=%d: %d wrong", scale, bad);
    free(sc); free(sd); free(rc); free(rd); free(s); free(r); free(types); free(sdb); free(rdb);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    uniform(0);
    uniform(1);
    uniform(100);
    uniform(262144 / size); /* 1 MiB per rank: pairwise rounds */
    vector(1);
    vector(50000);
    return finish();
}
