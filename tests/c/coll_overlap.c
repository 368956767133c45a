/* Overlapping communicators in flight at once: WORLD, a dup of it, a split of WORLD (reverse
 * key order) and a split of the dup each carry non-blocking collectives started together and
 * completed by one Waitall; then hundreds of outstanding Iallreduces on two communicators;
 * then Alltoallw with a different datatype per peer. Covers Igather, Igatherv, Iscatterv and
 * Ialltoallv, which no other test starts. */
#include "coll_util.h"

#define MANY 100

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Comm dup, split, split2;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_split(MPI_COMM_WORLD, rank % 3, -rank, &split);
    MPI_Comm_split(dup, rank < size / 2 ? 0 : 1, rank, &split2);
    int sr, ss, s2r, s2s;
    MPI_Comm_rank(split, &sr);
    MPI_Comm_size(split, &ss);
    MPI_Comm_rank(split2, &s2r);
    MPI_Comm_size(split2, &s2s);
    /* split: members are the world ranks of my residue mod 3, in descending order. */
    int above = 0, split_sum = 0, split2_max = -1;
    for (int r = rank % 3; r < size; r += 3) {
        above += r > rank;
        split_sum += r;
    }
    CHECK(sr == above, "split rank %d, expected %d", sr, above);
    for (int r = 0; r < size; r++)
        if ((r < size / 2) == (rank < size / 2))
            split2_max = r;

    MPI_Request req[9];
    /* 1. Ibcast on dup from the last rank. */
    int bc[100];
    for (int i = 0; i < 100; i++)
        bc[i] = rank == size - 1 ? i * 3 + 1 : -1;
    MPI_Ibcast(bc, 100, MPI_INT, size - 1, dup, &req[0]);
    /* 2. Iallreduce on split. */
    int sum = -1;
    MPI_Iallreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, split, &req[1]);
    /* 3. Igather on WORLD to rank 0. */
    int two = rank * 2, *g = xmalloc(size * sizeof(int));
    MPI_Igather(&two, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD, &req[2]);
    /* 4. Igatherv on dup to rank size/2: rank i sends i+1 ints. */
    int gvroot = size / 2, total = size * (size + 1) / 2;
    int *gvs = xmalloc((rank + 1) * sizeof(int)), *gv = xmalloc(total * sizeof(int));
    int *cnt = xmalloc(size * sizeof(int)), *dsp = xmalloc(size * sizeof(int));
    for (int j = 0; j <= rank; j++)
        gvs[j] = rank * 10 + j;
    for (int i = 0, d = 0; i < size; i++) {
        cnt[i] = i + 1;
        dsp[i] = d;
        d += i + 1;
    }
    for (int i = 0; i < total; i++)
        gv[i] = -1;
    MPI_Igatherv(gvs, rank + 1, MPI_INT, gv, cnt, dsp, MPI_INT, gvroot, dup, &req[3]);
    /* 5. Iscatterv on split from its rank 0: sub rank i gets i+1 ints. */
    int stotal = ss * (ss + 1) / 2;
    int *svs = xmalloc(stotal * sizeof(int)), *sv = xmalloc((sr + 1) * sizeof(int));
    int *scnt = xmalloc(ss * sizeof(int)), *sdsp = xmalloc(ss * sizeof(int));
    for (int i = 0, d = 0; i < ss; i++) {
        scnt[i] = i + 1;
        sdsp[i] = d;
        for (int j = 0; j <= i; j++)
            svs[d + j] = 100 * i + j;
        d += i + 1;
    }
    for (int j = 0; j <= sr; j++)
        sv[j] = -1;
    MPI_Iscatterv(svs, scnt, sdsp, MPI_INT, sv, sr + 1, MPI_INT, 0, split, &req[4]);
    /* 6. Ialltoallv on WORLD: to rank j, (j % 3) + 1 ints. */
    int *acnt = xmalloc(size * sizeof(int)), *adsp = xmalloc(size * sizeof(int));
    int *rcnt = xmalloc(size * sizeof(int)), *rdsp = xmalloc(size * sizeof(int));
    int atot = 0, rtot = 0;
    for (int j = 0; j < size; j++) {
        acnt[j] = j % 3 + 1;
        adsp[j] = atot;
        atot += acnt[j];
        rcnt[j] = rank % 3 + 1;
        rdsp[j] = rtot;
        rtot += rcnt[j];
    }
    int *as = xmalloc(atot * sizeof(int)), *ar = xmalloc(rtot * sizeof(int));
    for (int j = 0; j < size; j++)
        for (int k = 0; k < acnt[j]; k++)
            as[adsp[j] + k] = rank * 1000 + j * 10 + k;
    for (int i = 0; i < rtot; i++)
        ar[i] = -1;
    MPI_Ialltoallv(as, acnt, adsp, MPI_INT, ar, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD, &req[5]);
    /* 7-9. Ibarrier and Iallreduce(MAX) on split2, Iscan on dup. */
    MPI_Ibarrier(split2, &req[6]);
    int mx = -1, one = 1, sc = -1;
    MPI_Iallreduce(&rank, &mx, 1, MPI_INT, MPI_MAX, split2, &req[7]);
    MPI_Iscan(&one, &sc, 1, MPI_INT, MPI_SUM, dup, &req[8]);

    MPI_Waitall(9, req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < 100; i++)
        CHECK(bc[i] == i * 3 + 1, "ibcast[%d] = %d", i, bc[i]);
    CHECK(sum == split_sum, "split iallreduce %d, expected %d", sum, split_sum);
    if (rank == 0)
        for (int i = 0; i < size; i++)
            CHECK(g[i] == 2 * i, "igather[%d] = %d", i, g[i]);
    if (rank == gvroot)
        for (int i = 0; i < size; i++)
            for (int j = 0; j <= i; j++)
                CHECK(gv[dsp[i] + j] == i * 10 + j, "igatherv[%d][%d] = %d", i, j, gv[dsp[i] + j]);
    for (int j = 0; j <= sr; j++)
        CHECK(sv[j] == 100 * sr + j, "iscatterv[%d] = %d", j, sv[j]);
    for (int i = 0; i < size; i++)
        for (int k = 0; k < rcnt[i]; k++)
            CHECK(ar[rdsp[i] + k] == i * 1000 + rank * 10 + k, "ialltoallv from %d[%d] = %d", i,
                  k, ar[rdsp[i] + k]);
    CHECK(mx == split2_max, "split2 max %d, expected %d", mx, split2_max);
    CHECK(sc == rank + 1, "iscan %d", sc);

    /* Hundreds outstanding at once on two overlapping communicators. */
    MPI_Request many[2 * MANY];
    int in[2 * MANY], out[2 * MANY];
    for (int k = 0; k < MANY; k++) {
        in[2 * k] = k + rank;
        in[2 * k + 1] = k * rank;
        out[2 * k] = out[2 * k + 1] = -1;
        MPI_Iallreduce(&in[2 * k], &out[2 * k], 1, MPI_INT, MPI_SUM, dup, &many[2 * k]);
        MPI_Iallreduce(&in[2 * k + 1], &out[2 * k + 1], 1, MPI_INT, MPI_MAX, split,
                       &many[2 * k + 1]);
    }
    MPI_Waitall(2 * MANY, many, MPI_STATUSES_IGNORE);
    int maxmember = rank % 3 + 3 * ((size - 1 - rank % 3) / 3);
    for (int k = 0; k < MANY; k++) {
        CHECK(out[2 * k] == k * size + size * (size - 1) / 2, "many dup[%d] = %d", k, out[2 * k]);
        CHECK(out[2 * k + 1] == k * maxmember, "many split[%d] = %d", k, out[2 * k + 1]);
    }

    /* Alltoallw: ints (2 each) to even ranks, one double to odd ranks; 16-byte slots. */
    char *ws = xmalloc(16 * size), *wr = xmalloc(16 * size);
    int *wcnt = xmalloc(size * sizeof(int)), *wdsp = xmalloc(size * sizeof(int));
    int *wrcnt = xmalloc(size * sizeof(int));
    MPI_Datatype *wst = xmalloc(size * sizeof(MPI_Datatype)),
                 *wrt = xmalloc(size * sizeof(MPI_Datatype));
    for (int j = 0; j < size; j++) {
        wdsp[j] = 16 * j;
        wcnt[j] = j % 2 == 0 ? 2 : 1;
        wst[j] = j % 2 == 0 ? MPI_INT : MPI_DOUBLE;
        wrcnt[j] = rank % 2 == 0 ? 2 : 1;
        wrt[j] = rank % 2 == 0 ? MPI_INT : MPI_DOUBLE;
        if (j % 2 == 0) {
            int *p = (int *)(ws + 16 * j);
            p[0] = rank * 100 + j;
            p[1] = -(rank * 100 + j);
        } else {
            *(double *)(ws + 16 * j) = rank * 100 + j + 0.5;
        }
    }
    memset(wr, 0xff, 16 * size);
    MPI_Alltoallw(ws, wcnt, wdsp, wst, wr, wrcnt, wdsp, wrt, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++) {
        if (rank % 2 == 0) {
            int *p = (int *)(wr + 16 * i);
            CHECK(p[0] == i * 100 + rank && p[1] == -(i * 100 + rank), "alltoallw from %d: %d %d",
                  i, p[0], p[1]);
        } else {
            double d = *(double *)(wr + 16 * i);
            CHECK(d == i * 100 + rank + 0.5, "alltoallw from %d: %g", i, d);
        }
    }

    free(g); free(gvs); free(gv); free(cnt); free(dsp); free(svs); free(sv); free(scnt);
    free(sdsp); free(acnt); free(adsp); free(rcnt); free(rdsp); free(as); free(ar);
    free(ws); free(wr); free(wcnt); free(wdsp); free(wrcnt); free(wst); free(wrt);
    MPI_Comm_free(&split2);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);
    return finish();
}
