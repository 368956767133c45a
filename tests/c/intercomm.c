/* Intercommunicators: creation, queries, point-to-point, every collective (blocking and a few
 * non-blocking forms) with MPI's root rules, dup/split/create/compare, merge, and the MPI-4
 * creation from groups. Checks every value. Needs np >= 2; the groups are unequal at odd np. */
#include "coll_util.h"

static MPI_Comm inter;
static int isA, lrank, lsize, rsize;
static int *rworld; /* world rank of each remote rank */

/* The value remote rank `r` contributes (element j): unique per process. */
static int val(int world, int j) { return world * 100 + j; }

static int root_arg(int root_in_A, int root_rank) {
    /* Rooted collectives with the root in group A (or B) at local rank root_rank. */
    int root_side = root_in_A ? isA : !isA;
    if (root_side)
        return lrank == root_rank ? MPI_ROOT : MPI_PROC_NULL;
    return root_rank;
}

static void check_queries(void) {
    int flag, n, cmp;
    MPI_Group rg, wg;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag == 1, "test_inter gave %d", flag);
    MPI_Comm_test_inter(MPI_COMM_WORLD, &flag);
    CHECK(flag == 0, "test_inter(WORLD) gave %d", flag);
    MPI_Comm_remote_size(inter, &n);
    CHECK(n == rsize, "remote size %d, want %d", n, rsize);
    MPI_Comm_remote_group(inter, &rg);
    MPI_Group_size(rg, &n);
    CHECK(n == rsize, "remote group size %d", n);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    for (int i = 0; i < rsize; i++) {
        int w;
        MPI_Group_translate_ranks(rg, 1, &i, wg, &w);
        CHECK(w == rworld[i], "remote rank %d is world %d, want %d", i, w, rworld[i]);
    }
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
    MPI_Comm_compare(inter, inter, &cmp);
    CHECK(cmp == MPI_IDENT, "compare(inter, inter) %d", cmp);
    MPI_Comm_compare(inter, MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_UNEQUAL, "compare(inter, world) %d", cmp);
}

static void check_p2p(MPI_Comm c) {
    /* Everyone sends to every remote rank, then receives from each (by rank, then ANY_SOURCE). */
    MPI_Request *rq = malloc(sizeof(MPI_Request) * rsize);
    int *out = malloc(sizeof(int) * rsize), *in = malloc(sizeof(int) * rsize);
    for (int i = 0; i < rsize; i++) {
        out[i] = val(rank, i);
        MPI_Isend(&out[i], 1, MPI_INT, i, 7, c, &rq[i]);
    }
    for (int i = 0; i < rsize; i++) {
        MPI_Status st;
        MPI_Recv(&in[i], 1, MPI_INT, i, 7, c, &st);
        CHECK(in[i] == val(rworld[i], lrank), "p2p from %d: %d, want %d", i, in[i], val(rworld[i], lrank));
        CHECK(st.MPI_SOURCE == i, "p2p source %d, want %d", st.MPI_SOURCE, i);
    }
    MPI_Waitall(rsize, rq, MPI_STATUSES_IGNORE);
    for (int i = 0; i < rsize; i++)
        MPI_Isend(&out[i], 1, MPI_INT, i, 8, c, &rq[i]);
    for (int i = 0; i < rsize; i++) {
        MPI_Status st;
        int v;
        MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 8, c, &st);
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < rsize && v == val(rworld[st.MPI_SOURCE], lrank),
              "any-source p2p: source %d value %d", st.MPI_SOURCE, v);
    }
    MPI_Waitall(rsize, rq, MPI_STATUSES_IGNORE);
    int err = MPI_Send(out, 1, MPI_INT, rsize, 9, c); /* out of the remote group's range */
    CHECK(err != MPI_SUCCESS, "send to remote rank %d (remote size %d) succeeded", rsize, rsize);
    free(rq);
    free(out);
    free(in);
}

static void check_rooted(MPI_Comm c, int rootA, int rr) {
    int root = root_arg(rootA, rr);
    int *rootworld_in_remote = NULL;
    (void)rootworld_in_remote;
    const int N = 3;
    int buf[3], *all = malloc(sizeof(int) * N * rsize + 1), *cnt = malloc(sizeof(int) * rsize),
        *dsp = malloc(sizeof(int) * rsize);
    int rootw = root >= 0 ? rworld[root] : rank; /* the root's world rank, where it matters */

    /* Bcast */
    for (int j = 0; j < N; j++)
        buf[j] = root == MPI_ROOT ? val(rank, j) : -1;
    /* At MPI_PROC_NULL every other argument is insignificant (mpi4py passes None). */
    if (root == MPI_PROC_NULL)
        CHECK(MPI_Bcast(NULL, 0, MPI_DATATYPE_NULL, root, c) == MPI_SUCCESS, "bcast at PROC_NULL failed");
    else
        MPI_Bcast(buf, N, MPI_INT, root, c);
    for (int j = 0; j < N; j++) {
        int want = root >= 0 ? val(rootw, j) : (root == MPI_ROOT ? val(rank, j) : -1);
        CHECK(buf[j] == want, "bcast[%d] %d, want %d (root %d)", j, buf[j], want, root);
    }

    /* Gather / Gatherv (remote rank i gives i+1 elements in the v form, reversed order) */
    for (int j = 0; j < N; j++)
        buf[j] = val(rank, j);
    for (int i = 0; i < N * rsize; i++)
        all[i] = -1;
    MPI_Gather(buf, N, MPI_INT, all, N, MPI_INT, root, c);
    if (root == MPI_ROOT)
        for (int i = 0; i < rsize; i++)
            for (int j = 0; j < N; j++)
                CHECK(all[i * N + j] == val(rworld[i], j), "gather[%d][%d] %d", i, j, all[i * N + j]);
    int off = 0;
    for (int i = rsize - 1; i >= 0; i--) {
        cnt[i] = 1 + i % N;
        dsp[i] = off;
        off += cnt[i];
    }
    for (int i = 0; i < N * rsize; i++)
        all[i] = -1;
    MPI_Gatherv(buf, 1 + lrank % N, MPI_INT, all, cnt, dsp, MPI_INT, root, c);
    if (root == MPI_ROOT)
        for (int i = 0; i < rsize; i++)
            for (int j = 0; j < cnt[i]; j++)
                CHECK(all[dsp[i] + j] == val(rworld[i], j), "gatherv[%d][%d] %d", i, j, all[dsp[i] + j]);

    /* Scatter / Scatterv */
    for (int i = 0; i < N * rsize; i++)
        all[i] = root == MPI_ROOT ? val(rank, i) : -1;
    for (int j = 0; j < N; j++)
        buf[j] = -1;
    MPI_Scatter(all, N, MPI_INT, buf, N, MPI_INT, root, c);
    if (root >= 0)
        for (int j = 0; j < N; j++)
            CHECK(buf[j] == val(rootw, lrank * N + j), "scatter[%d] %d", j, buf[j]);
    for (int j = 0; j < N; j++)
        buf[j] = -1;
    MPI_Scatterv(all, cnt, dsp, MPI_INT, buf, 1 + lrank % N, MPI_INT, root, c);
    if (root >= 0) {
        /* the root's layout: its remote ranks (= our local ranks) in reverse order */
        int o = 0;
        for (int i = lsize - 1; i > lrank; i--)
            o += 1 + i % N;
        for (int j = 0; j < 1 + lrank % N; j++)
            CHECK(buf[j] == val(rootw, o + j), "scatterv[%d] %d, want %d", j, buf[j], val(rootw, o + j));
    }

    /* Reduce (sum and a non-commutative-free check with MAX) */
    int s[2] = {rank, lrank}, r[2] = {-1, -1};
    if (root == MPI_PROC_NULL)
        CHECK(MPI_Reduce(NULL, NULL, 0, MPI_DATATYPE_NULL, MPI_OP_NULL, root, c) == MPI_SUCCESS,
              "reduce at PROC_NULL failed");
    else
        MPI_Reduce(root == MPI_ROOT ? NULL : s, r, 2, MPI_INT, MPI_SUM, root, c);
    if (root == MPI_ROOT) {
        int w = 0, l = 0;
        for (int i = 0; i < rsize; i++) {
            w += rworld[i];
            l += i;
        }
        CHECK(r[0] == w && r[1] == l, "reduce %d %d, want %d %d", r[0], r[1], w, l);
    } else {
        CHECK(r[0] == -1 && r[1] == -1, "reduce wrote a non-root buffer");
    }
    free(all);
    free(cnt);
    free(dsp);
}

static void check_all(MPI_Comm c) {
    const int N = 2;
    int *all = malloc(sizeof(int) * N * rsize), buf[2] = {val(rank, 0), val(rank, 1)};
    int *cnt = malloc(sizeof(int) * rsize), *dsp = malloc(sizeof(int) * rsize);

    MPI_Barrier(c);

    MPI_Allgather(buf, N, MPI_INT, all, N, MPI_INT, c);
    for (int i = 0; i < rsize; i++)
        for (int j = 0; j < N; j++)
            CHECK(all[i * N + j] == val(rworld[i], j), "allgather[%d][%d] %d", i, j, all[i * N + j]);
    for (int i = 0; i < rsize; i++) {
        cnt[i] = 1 + i % 2;
        dsp[i] = 2 * (rsize - 1 - i);
    }
    for (int i = 0; i < N * rsize; i++)
        all[i] = -1;
    MPI_Allgatherv(buf, 1 + lrank % 2, MPI_INT, all, cnt, dsp, MPI_INT, c);
    for (int i = 0; i < rsize; i++)
        for (int j = 0; j < cnt[i]; j++)
            CHECK(all[dsp[i] + j] == val(rworld[i], j), "allgatherv[%d][%d] %d", i, j, all[dsp[i] + j]);

    /* Alltoall: block for remote rank i is val(rank, i) */
    int *sb = malloc(sizeof(int) * rsize), *rb = malloc(sizeof(int) * rsize);
    for (int i = 0; i < rsize; i++) {
        sb[i] = val(rank, i);
        rb[i] = -1;
    }
    MPI_Alltoall(sb, 1, MPI_INT, rb, 1, MPI_INT, c);
    for (int i = 0; i < rsize; i++)
        CHECK(rb[i] == val(rworld[i], lrank), "alltoall[%d] %d", i, rb[i]);
    int *ones = malloc(sizeof(int) * rsize), *idx = malloc(sizeof(int) * rsize);
    int *bd = malloc(sizeof(int) * rsize);
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * rsize);
    for (int i = 0; i < rsize; i++) {
        ones[i] = 1;
        idx[i] = rsize - 1 - i;
        bd[i] = (int)sizeof(int) * (rsize - 1 - i);
        ty[i] = MPI_INT;
        rb[i] = -1;
    }
    MPI_Alltoallv(sb, ones, idx, MPI_INT, rb, ones, idx, MPI_INT, c);
    /* block for remote i was taken from sb[rsize-1-i] and lands at rb[rsize-1-i] */
    for (int i = 0; i < rsize; i++)
        CHECK(rb[rsize - 1 - i] == val(rworld[i], lsize - 1 - lrank), "alltoallv[%d] %d", i, rb[rsize - 1 - i]);
    for (int i = 0; i < rsize; i++)
        rb[i] = -1;
    MPI_Alltoallw(sb, ones, bd, ty, rb, ones, bd, ty, c);
    for (int i = 0; i < rsize; i++)
        CHECK(rb[rsize - 1 - i] == val(rworld[i], lsize - 1 - lrank), "alltoallw[%d] %d", i, rb[rsize - 1 - i]);

    /* Allreduce: the other group's sum */
    int s[2] = {rank, 1}, r[2];
    MPI_Allreduce(s, r, 2, MPI_INT, MPI_SUM, c);
    int w = 0;
    for (int i = 0; i < rsize; i++)
        w += rworld[i];
    CHECK(r[0] == w && r[1] == rsize, "allreduce %d %d, want %d %d", r[0], r[1], w, rsize);

    /* Reduce_scatter_block needs equal totals: lsize * k == rsize * k' — use one element per
     * process of the larger...: total = lsize*rsize, block = rsize here, lsize there. */
    int total = lsize * rsize;
    int *rs = malloc(sizeof(int) * total), *rr = malloc(sizeof(int) * total);
    for (int i = 0; i < total; i++)
        rs[i] = rank + i;
    MPI_Reduce_scatter_block(rs, rr, rsize, MPI_INT, MPI_SUM, c);
    for (int j = 0; j < rsize; j++)
        CHECK(rr[j] == w + rsize * (lrank * rsize + j), "reduce_scatter_block[%d] %d", j, rr[j]);
    int *rc = malloc(sizeof(int) * lsize);
    for (int i = 0; i < lsize; i++)
        rc[i] = rsize;
    MPI_Reduce_scatter(rs, rr, rc, MPI_INT, MPI_MAX, c);
    int wmax = 0;
    for (int i = 0; i < rsize; i++)
        wmax = rworld[i] > wmax ? rworld[i] : wmax;
    for (int j = 0; j < rsize; j++)
        CHECK(rr[j] == wmax + lrank * rsize + j, "reduce_scatter[%d] %d", j, rr[j]);

    /* Non-blocking forms, two outstanding at once */
    MPI_Request rq[3];
    int b2[2] = {-1, -1};
    int root = root_arg(0, 0); /* root in group B, local rank 0 */
    if (root == MPI_ROOT) {
        b2[0] = 4242;
        b2[1] = rank;
    }
    MPI_Ibcast(b2, 2, MPI_INT, root, c, &rq[0]);
    MPI_Iallreduce(s, r, 2, MPI_INT, MPI_SUM, c, &rq[1]);
    MPI_Ibarrier(c, &rq[2]);
    MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    if (root >= 0)
        CHECK(b2[0] == 4242 && b2[1] == rworld[0], "ibcast %d %d", b2[0], b2[1]);
    CHECK(r[0] == w && r[1] == rsize, "iallreduce %d %d", r[0], r[1]);
    int err = MPI_Bcast(b2, 1, MPI_INT, rsize, c);
    CHECK(err != MPI_SUCCESS, "bcast with root %d (remote size %d) succeeded", rsize, rsize);

    free(all);
    free(cnt);
    free(dsp);
    free(sb);
    free(rb);
    free(ones);
    free(idx);
    free(bd);
    free(ty);
    free(rs);
    free(rr);
    free(rc);
}

static void check_everything(MPI_Comm c) {
    check_p2p(c);
    check_rooted(c, 1, 0);
    check_rooted(c, 0, rsize > 1 && !isA ? 0 : 0);
    check_rooted(c, 0, (isA ? rsize : lsize) - 1);
    check_all(c);
}

/* The world ranks of this intercomm's remote group. */
static void learn_remote(MPI_Comm c) {
    MPI_Group rg, wg;
    MPI_Comm_rank(c, &lrank);
    MPI_Comm_size(c, &lsize);
    MPI_Comm_remote_size(c, &rsize);
    MPI_Comm_remote_group(c, &rg);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    free(rworld);
    rworld = malloc(sizeof(int) * rsize);
    for (int i = 0; i < rsize; i++)
        MPI_Group_translate_ranks(rg, 1, &i, wg, &rworld[i]);
    MPI_Group_free(&rg);
    MPI_Group_free(&wg);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    if (size < 2) {
        printf(" No Errors\n");
        MPI_Finalize();
        return 0;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* A: the first (size+1)/2 world ranks, in reverse order; B: the rest, in order. */
    int na = (size + 1) / 2;
    isA = rank < na;
    MPI_Comm local;
    MPI_Comm_split(MPI_COMM_WORLD, isA, isA ? -rank : rank, &local);
    int remote_leader = isA ? na : na - 1; /* world rank of the other group's local rank 0 */
    MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, remote_leader, 99, &inter);
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    learn_remote(inter);
    CHECK(lsize == (isA ? na : size - na), "local size %d", lsize);
    CHECK(rsize == (isA ? size - na : na), "remote size %d", rsize);
    for (int i = 0; i < rsize; i++) {
        int want = isA ? na + i : na - 1 - i;
        CHECK(rworld[i] == want, "remote rank %d is world %d, want %d", i, rworld[i], want);
    }
    check_queries();
    check_everything(inter);

    /* Dup: same groups, separate traffic */
    MPI_Comm dup;
    MPI_Comm_dup(inter, &dup);
    int cmp;
    MPI_Comm_compare(inter, dup, &cmp);
    CHECK(cmp == MPI_CONGRUENT, "compare(inter, dup) %d", cmp);
    check_everything(dup);
    MPI_Comm_free(&dup);

    /* Split: color by world rank parity; each part an intercomm of that parity's members. */
    MPI_Comm sp;
    MPI_Comm_split(inter, rank % 2, rank, &sp);
    int la = 0, lb = 0; /* members of my color in A and in B */
    for (int w = 0; w < size; w++)
        if (w % 2 == rank % 2)
            (w < na ? la++ : lb++);
    if ((isA ? lb : la) == 0) {
        CHECK(sp == MPI_COMM_NULL, "split with an empty remote side is not MPI_COMM_NULL");
    } else {
        CHECK(sp != MPI_COMM_NULL, "split gave MPI_COMM_NULL");
        int flag;
        MPI_Comm_test_inter(sp, &flag);
        CHECK(flag, "split of an intercomm is not an intercomm");
        learn_remote(sp);
        CHECK(lsize == (isA ? la : lb) && rsize == (isA ? lb : la), "split sizes %d %d", lsize, rsize);
        for (int i = 0; i < rsize; i++)
            CHECK(rworld[i] % 2 == rank % 2 && (rworld[i] < na) != isA, "split remote %d", rworld[i]);
        check_everything(sp);
        MPI_Comm_free(&sp);
    }

    /* Create: each side keeps its local rank 0 only */
    learn_remote(inter);
    MPI_Group lg, g0;
    MPI_Comm_group(inter, &lg);
    int zero = 0;
    MPI_Group_incl(lg, 1, &zero, &g0);
    MPI_Comm cr;
    MPI_Comm_create(inter, g0, &cr);
    if (lrank == 0) {
        CHECK(cr != MPI_COMM_NULL, "create gave MPI_COMM_NULL at local rank 0");
        int rs2;
        MPI_Comm_remote_size(cr, &rs2);
        CHECK(rs2 == 1, "created remote size %d", rs2);
        int v = rank, got = -1;
        MPI_Sendrecv(&v, 1, MPI_INT, 0, 3, &got, 1, MPI_INT, 0, 3, cr, MPI_STATUS_IGNORE);
        CHECK(got == rworld[0], "created intercomm sendrecv %d, want %d", got, rworld[0]);
        MPI_Comm_free(&cr);
    } else {
        CHECK(cr == MPI_COMM_NULL, "create outside the group is not MPI_COMM_NULL");
    }
    MPI_Group_free(&g0);
    MPI_Group_free(&lg);

    /* Merge: B high, so A's members come first in A's local order */
    MPI_Comm merged;
    MPI_Intercomm_merge(inter, !isA, &merged);
    int mr, ms;
    MPI_Comm_rank(merged, &mr);
    MPI_Comm_size(merged, &ms);
    CHECK(ms == size, "merged size %d", ms);
    CHECK(mr == (isA ? lrank : na + lrank), "merged rank %d (local %d)", mr, lrank);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == size * (size - 1) / 2, "merged allreduce %d", sum);
    MPI_Comm_free(&merged);
    /* Both low: the group with the lower first world rank (B's rank 0 is world na, A's
     * rank 0 is world na-1) goes first: A. */
    MPI_Intercomm_merge(inter, 0, &merged);
    MPI_Comm_rank(merged, &mr);
    CHECK(mr == (isA ? lrank : na + lrank), "merged (both low) rank %d", mr);
    MPI_Comm_free(&merged);

    /* MPI-4: from groups (A: world 0..na-1, B: the rest, both in world order) */
    MPI_Group wg, ga, gb;
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    int ra[3] = {0, na - 1, 1}, rb3[3] = {na, size - 1, 1};
    MPI_Group_range_incl(wg, 1, &ra, &ga);
    MPI_Group_range_incl(wg, 1, &rb3, &gb);
    MPI_Comm fg;
    MPI_Intercomm_create_from_groups(isA ? ga : gb, 0, isA ? gb : ga, 0, "rmpi-intercomm-test",
                                     MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg);
    learn_remote(fg);
    CHECK(lrank == (isA ? rank : rank - na), "from_groups rank %d", lrank);
    for (int i = 0; i < rsize; i++)
        CHECK(rworld[i] == (isA ? na + i : i), "from_groups remote %d is %d", i, rworld[i]);
    check_everything(fg);
    MPI_Comm_free(&fg);
    MPI_Comm cg;
    MPI_Comm_create_from_group(isA ? ga : gb, "rmpi-intercomm-group", MPI_INFO_NULL,
                               MPI_ERRORS_RETURN, &cg);
    int cgs;
    MPI_Comm_size(cg, &cgs);
    CHECK(cgs == (isA ? na : size - na), "create_from_group size %d", cgs);
    MPI_Comm_free(&cg);
    MPI_Group_free(&ga);
    MPI_Group_free(&gb);
    MPI_Group_free(&wg);

    /* Intracomm-only and intercomm-only calls refuse the wrong kind */
    int n;
    CHECK(MPI_Comm_remote_size(MPI_COMM_WORLD, &n) != MPI_SUCCESS, "remote_size of WORLD succeeded");
    CHECK(MPI_Scan(&rank, &n, 1, MPI_INT, MPI_SUM, inter) != MPI_SUCCESS, "scan on an intercomm succeeded");
    {
        int dims[1] = {lsize}, periods[1] = {0};
        MPI_Comm cart = MPI_COMM_NULL;
        CHECK(MPI_Cart_create(inter, 1, dims, periods, 0, &cart) != MPI_SUCCESS,
              "cart_create on an intercomm succeeded");
        /* Overlapping groups (both sides are the whole world) are refused, without a hang. */
        MPI_Comm bad = MPI_COMM_NULL;
        CHECK(MPI_Intercomm_create(MPI_COMM_WORLD, 0, MPI_COMM_WORLD, 0, 5, &bad) != MPI_SUCCESS,
              "an intercomm of overlapping groups was created");
    }

    MPI_Comm_free(&inter);
    MPI_Comm_free(&local);
    free(rworld);
    return finish();
}
