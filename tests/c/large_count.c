/* The large-count (_c) forms: every one rmpi implements, once each with small counts
 * (point-to-point in every mode, blocking, non-blocking and persistent; matched receives;
 * every collective with its v-, w- and I- forms; MPI_Reduce_local_c and MPI_Op_create_c;
 * status queries, datatype constructors and queries, pack/unpack), then negative and
 * too-large counts under MPI_ERRORS_RETURN (MPI_ERR_COUNT). Needs at least 2 ranks. */
#include "coll_util.h"

#include <stdint.h>

#define N 4

static MPI_Count max_len_seen = -1;

/* An MPI_User_function_c: elementwise sum of ints, remembering the largest len. */
static void sum_c(void *in, void *inout, MPI_Count *len, MPI_Datatype *dt) {
    int *a = in, *b = inout;
    CHECK(*dt == MPI_INT, "user op got another datatype");
    if (*len > max_len_seen)
        max_len_seen = *len;
    for (MPI_Count i = 0; i < *len; i++)
        b[i] += a[i];
}

/* An MPI_User_function (int len): elementwise max. */
static void max_int(void *in, void *inout, int *len, MPI_Datatype *dt) {
    int *a = in, *b = inout;
    (void)dt;
    for (int i = 0; i < *len; i++)
        if (a[i] > b[i])
            b[i] = a[i];
}

static void fill(int *v, int n, int base) {
    for (int i = 0; i < n; i++)
        v[i] = base + i;
}

static int same(const int *v, int n, int base) {
    for (int i = 0; i < n; i++)
        if (v[i] != base + i)
            return 0;
    return 1;
}

static void p2p(void) {
    int s[N], r[N];
    MPI_Status st;
    MPI_Request req, reqs[2];
    MPI_Count c;
    MPI_Comm w = MPI_COMM_WORLD;

    /* Blocking modes: standard, synchronous, buffered. */
    if (rank == 0) {
        fill(s, N, 100);
        MPI_Send_c(s, N, MPI_INT, 1, 1, w);
        MPI_Ssend_c(s, N, MPI_INT, 1, 2, w);
        int bsize = N * (int)sizeof(int) * 3 + 3 * MPI_BSEND_OVERHEAD;
        char *bbuf = xmalloc(bsize);
        MPI_Buffer_attach_c(bbuf, bsize);
        MPI_Bsend_c(s, N, MPI_INT, 1, 3, w);
        MPI_Ibsend_c(s, N, MPI_INT, 1, 4, w, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        void *got;
        MPI_Count gsize;
        MPI_Buffer_detach_c(&got, &gsize);
        CHECK(got == bbuf && gsize == bsize, "Buffer_detach_c gave %p/%lld", got, (long long)gsize);
        free(bbuf);
    } else if (rank == 1) {
        for (int tag = 1; tag <= 4; tag++) {
            memset(r, 0, sizeof r);
            MPI_Recv_c(r, N, MPI_INT, 0, tag, w, &st);
            CHECK(same(r, N, 100), "Recv_c tag %d", tag);
            MPI_Get_count_c(&st, MPI_INT, &c);
            CHECK(c == N, "Get_count_c %lld", (long long)c);
            MPI_Get_elements_c(&st, MPI_INT, &c);
            CHECK(c == N, "Get_elements_c %lld", (long long)c);
        }
    }

    /* Ready sends: the receive is posted before the barrier. */
    if (rank == 1) {
        MPI_Irecv_c(r, N, MPI_INT, 0, 5, w, &reqs[0]);
        MPI_Irecv_c(r + 2, 2, MPI_INT, 0, 6, w, &reqs[1]);
    }
    MPI_Barrier(w);
    if (rank == 0) {
        fill(s, N, 200);
        MPI_Rsend_c(s, 2, MPI_INT, 1, 5, w);
        MPI_Irsend_c(s + 2, 2, MPI_INT, 1, 6, w, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        CHECK(same(r, N, 200), "Rsend_c/Irsend_c");
    }

    /* Non-blocking standard and synchronous. */
    if (rank == 0) {
        fill(s, N, 300);
        MPI_Isend_c(s, 2, MPI_INT, 1, 7, w, &reqs[0]);
        MPI_Issend_c(s + 2, 2, MPI_INT, 1, 8, w, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
    } else if (rank == 1) {
        MPI_Irecv_c(r, 2, MPI_INT, 0, 7, w, &reqs[0]);
        MPI_Irecv_c(r + 2, 2, MPI_INT, 0, 8, w, &reqs[1]);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        CHECK(same(r, N, 300), "Isend_c/Issend_c");
    }

    /* Persistent: standard, synchronous, buffered, ready; Recv_init_c. */
    if (rank == 1) {
        MPI_Request rr;
        MPI_Recv_init_c(r, N, MPI_INT, 0, 9, w, &rr);
        for (int k = 0; k < 4; k++) {
            memset(r, 0, sizeof r);
            MPI_Start(&rr);
            if (k == 3)
                MPI_Barrier(w); /* posted before the ready send */
            MPI_Wait(&rr, MPI_STATUS_IGNORE);
            CHECK(same(r, N, 400 + k), "persistent send %d", k);
        }
        MPI_Request_free(&rr);
    } else if (rank == 0) {
        int bsize = N * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
        char *bbuf = xmalloc(bsize);
        MPI_Buffer_attach_c(bbuf, bsize);
        MPI_Request p[4];
        MPI_Send_init_c(s, N, MPI_INT, 1, 9, w, &p[0]);
        MPI_Ssend_init_c(s, N, MPI_INT, 1, 9, w, &p[1]);
        MPI_Bsend_init_c(s, N, MPI_INT, 1, 9, w, &p[2]);
        MPI_Rsend_init_c(s, N, MPI_INT, 1, 9, w, &p[3]);
        for (int k = 0; k < 4; k++) {
            fill(s, N, 400 + k);
            if (k == 3)
                MPI_Barrier(w);
            MPI_Start(&p[k]);
            MPI_Wait(&p[k], MPI_STATUS_IGNORE);
            MPI_Request_free(&p[k]);
        }
        void *got;
        MPI_Count gsize;
        MPI_Buffer_detach_c(&got, &gsize);
        free(bbuf);
    } else {
        MPI_Barrier(w);
    }

    /* Sendrecv_c and Sendrecv_replace_c between 0 and 1. */
    if (rank < 2) {
        int peer = 1 - rank;
        fill(s, N, 500 + rank);
        MPI_Sendrecv_c(s, N, MPI_INT, peer, 10, r, N, MPI_INT, peer, 10, w, &st);
        CHECK(same(r, N, 500 + peer), "Sendrecv_c");
        MPI_Get_count_c(&st, MPI_INT, &c);
        CHECK(c == N, "Sendrecv_c count %lld", (long long)c);
        fill(r, N, 600 + rank);
        MPI_Sendrecv_replace_c(r, N, MPI_INT, peer, 11, peer, 11, w, MPI_STATUS_IGNORE);
        CHECK(same(r, N, 600 + peer), "Sendrecv_replace_c");
    }

    /* Matched receives. */
    if (rank == 0) {
        fill(s, N, 700);
        MPI_Send_c(s, N, MPI_INT, 1, 12, w);
        MPI_Send_c(s, N, MPI_INT, 1, 13, w);
    } else if (rank == 1) {
        MPI_Message m;
        MPI_Mprobe(0, 12, w, &m, &st);
        MPI_Mrecv_c(r, N, MPI_INT, &m, &st);
        CHECK(same(r, N, 700) && m == MPI_MESSAGE_NULL, "Mrecv_c");
        memset(r, 0, sizeof r);
        MPI_Mprobe(0, 13, w, &m, &st);
        MPI_Imrecv_c(r, N, MPI_INT, &m, &req);
        MPI_Wait(&req, &st);
        CHECK(same(r, N, 700), "Imrecv_c");
    }

    /* A derived type through Send_c/Recv_c: every other int of 2N. */
    MPI_Datatype vec;
    MPI_Type_vector_c(N, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    if (rank == 0) {
        int big[2 * N];
        fill(big, 2 * N, 0);
        MPI_Send_c(big, 1, vec, 1, 14, w);
    } else if (rank == 1) {
        MPI_Recv_c(r, N, MPI_INT, 0, 14, w, &st);
        CHECK(r[0] == 0 && r[1] == 2 && r[2] == 4 && r[3] == 6, "vector via Send_c");
        MPI_Get_elements_c(&st, vec, &c);
        CHECK(c == N, "Get_elements_c of vector %lld", (long long)c);
        MPI_Get_count_c(&st, vec, &c);
        CHECK(c == 1, "Get_count_c of vector %lld", (long long)c);
        MPI_Status_set_elements_c(&st, MPI_INT, 3);
        MPI_Get_elements_c(&st, MPI_INT, &c);
        CHECK(c == 3, "Status_set_elements_c %lld", (long long)c);
    }
    MPI_Type_free(&vec);
}

/* Check a non-blocking form by waiting at once. */
#define WAIT(call)                                   \
    do {                                             \
        MPI_Request rq_;                             \
        call;                                        \
        MPI_Wait(&rq_, MPI_STATUS_IGNORE);           \
    } while (0)

static void collectives(void) {
    MPI_Comm w = MPI_COMM_WORLD;
    int n = size;
    int s[N], r[N];
    int *big = xmalloc(sizeof(int) * N * n), *big2 = xmalloc(sizeof(int) * N * n);
    MPI_Count *counts = xmalloc(sizeof(MPI_Count) * n);
    MPI_Aint *displs = xmalloc(sizeof(MPI_Aint) * n);
    MPI_Datatype *types = xmalloc(sizeof(MPI_Datatype) * n);

    for (int form = 0; form < 2; form++) {
        const char *f = form ? "I" : "";
        /* Bcast */
        fill(r, N, rank == 0 ? 10 : -99);
        if (form) WAIT(MPI_Ibcast_c(r, N, MPI_INT, 0, w, &rq_));
        else MPI_Bcast_c(r, N, MPI_INT, 0, w);
        CHECK(same(r, N, 10), "%sbcast_c", f);

        /* Reductions: s[i] = rank + i. */
        fill(s, N, rank);
        int sum0 = n * (n - 1) / 2; /* sum of ranks */
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Ireduce_c(s, r, N, MPI_INT, MPI_SUM, n - 1, w, &rq_));
        else MPI_Reduce_c(s, r, N, MPI_INT, MPI_SUM, n - 1, w);
        if (rank == n - 1)
            for (int i = 0; i < N; i++)
                CHECK(r[i] == sum0 + n * i, "%sreduce_c [%d] = %d", f, i, r[i]);
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Iallreduce_c(s, r, N, MPI_INT, MPI_SUM, w, &rq_));
        else MPI_Allreduce_c(s, r, N, MPI_INT, MPI_SUM, w);
        for (int i = 0; i < N; i++)
            CHECK(r[i] == sum0 + n * i, "%sallreduce_c [%d] = %d", f, i, r[i]);
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Iscan_c(s, r, N, MPI_INT, MPI_SUM, w, &rq_));
        else MPI_Scan_c(s, r, N, MPI_INT, MPI_SUM, w);
        for (int i = 0; i < N; i++)
            CHECK(r[i] == rank * (rank + 1) / 2 + (rank + 1) * i, "%sscan_c [%d] = %d", f, i, r[i]);
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Iexscan_c(s, r, N, MPI_INT, MPI_SUM, w, &rq_));
        else MPI_Exscan_c(s, r, N, MPI_INT, MPI_SUM, w);
        if (rank > 0)
            for (int i = 0; i < N; i++)
                CHECK(r[i] == rank * (rank - 1) / 2 + rank * i, "%sexscan_c [%d] = %d", f, i, r[i]);

        /* Reduce_scatter(_block): rank j gets block j of the sum; big[k] = rank + k. */
        fill(big, N * n, rank);
        for (int j = 0; j < n; j++)
            counts[j] = N;
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Ireduce_scatter_c(big, r, counts, MPI_INT, MPI_SUM, w, &rq_));
        else MPI_Reduce_scatter_c(big, r, counts, MPI_INT, MPI_SUM, w);
        for (int i = 0; i < N; i++)
            CHECK(r[i] == sum0 + n * (rank * N + i), "%sreduce_scatter_c [%d] = %d", f, i, r[i]);
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Ireduce_scatter_block_c(big, r, N, MPI_INT, MPI_SUM, w, &rq_));
        else MPI_Reduce_scatter_block_c(big, r, N, MPI_INT, MPI_SUM, w);
        for (int i = 0; i < N; i++)
            CHECK(r[i] == sum0 + n * (rank * N + i), "%sreduce_scatter_block_c [%d] = %d", f, i, r[i]);

        /* Gather(v): rank j contributes N ints 100j.. ; the v-form reverses the blocks. */
        fill(s, N, 100 * rank);
        for (int j = 0; j < n; j++) {
            counts[j] = N;
            displs[j] = (MPI_Aint)(n - 1 - j) * N;
        }
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Igather_c(s, N, MPI_INT, big2, N, MPI_INT, 0, w, &rq_));
        else MPI_Gather_c(s, N, MPI_INT, big2, N, MPI_INT, 0, w);
        if (rank == 0)
            for (int j = 0; j < n; j++)
                CHECK(same(big2 + j * N, N, 100 * j), "%sgather_c block %d", f, j);
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Igatherv_c(s, N, MPI_INT, big2, counts, displs, MPI_INT, 0, w, &rq_));
        else MPI_Gatherv_c(s, N, MPI_INT, big2, counts, displs, MPI_INT, 0, w);
        if (rank == 0)
            for (int j = 0; j < n; j++)
                CHECK(same(big2 + (n - 1 - j) * N, N, 100 * j), "%sgatherv_c block %d", f, j);

        /* Allgather(v). */
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Iallgather_c(s, N, MPI_INT, big2, N, MPI_INT, w, &rq_));
        else MPI_Allgather_c(s, N, MPI_INT, big2, N, MPI_INT, w);
        for (int j = 0; j < n; j++)
            CHECK(same(big2 + j * N, N, 100 * j), "%sallgather_c block %d", f, j);
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Iallgatherv_c(s, N, MPI_INT, big2, counts, displs, MPI_INT, w, &rq_));
        else MPI_Allgatherv_c(s, N, MPI_INT, big2, counts, displs, MPI_INT, w);
        for (int j = 0; j < n; j++)
            CHECK(same(big2 + (n - 1 - j) * N, N, 100 * j), "%sallgatherv_c block %d", f, j);

        /* Scatter(v) from the last rank: block j is 1000 + 10j.. (v: blocks reversed). */
        if (rank == n - 1)
            for (int j = 0; j < n; j++)
                fill(big + j * N, N, 1000 + 10 * j);
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Iscatter_c(big, N, MPI_INT, r, N, MPI_INT, n - 1, w, &rq_));
        else MPI_Scatter_c(big, N, MPI_INT, r, N, MPI_INT, n - 1, w);
        CHECK(same(r, N, 1000 + 10 * rank), "%sscatter_c", f);
        memset(r, 0, sizeof r);
        if (form) WAIT(MPI_Iscatterv_c(big, counts, displs, MPI_INT, r, N, MPI_INT, n - 1, w, &rq_));
        else MPI_Scatterv_c(big, counts, displs, MPI_INT, r, N, MPI_INT, n - 1, w);
        CHECK(same(r, N, 1000 + 10 * (n - 1 - rank)), "%sscatterv_c", f);

        /* Alltoall(v/w): block j of rank i's send is 100i + 10j..; 2 ints each. */
        for (int j = 0; j < n; j++)
            fill(big + 2 * j, 2, 100 * rank + 10 * j);
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Ialltoall_c(big, 2, MPI_INT, big2, 2, MPI_INT, w, &rq_));
        else MPI_Alltoall_c(big, 2, MPI_INT, big2, 2, MPI_INT, w);
        for (int j = 0; j < n; j++)
            CHECK(same(big2 + 2 * j, 2, 100 * j + 10 * rank), "%salltoall_c from %d", f, j);
        MPI_Count *rcounts = xmalloc(sizeof(MPI_Count) * n);
        MPI_Aint *rdispls = xmalloc(sizeof(MPI_Aint) * n);
        for (int j = 0; j < n; j++) {
            counts[j] = 2;
            displs[j] = 2 * j;
            rcounts[j] = 2;
            rdispls[j] = 2 * (n - 1 - j);
            types[j] = MPI_INT;
        }
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Ialltoallv_c(big, counts, displs, MPI_INT, big2, rcounts, rdispls, MPI_INT, w, &rq_));
        else MPI_Alltoallv_c(big, counts, displs, MPI_INT, big2, rcounts, rdispls, MPI_INT, w);
        for (int j = 0; j < n; j++)
            CHECK(same(big2 + 2 * (n - 1 - j), 2, 100 * j + 10 * rank), "%salltoallv_c from %d", f, j);
        for (int j = 0; j < n; j++) { /* w-form displacements are in bytes */
            displs[j] *= sizeof(int);
            rdispls[j] *= sizeof(int);
        }
        memset(big2, 0, sizeof(int) * N * n);
        if (form) WAIT(MPI_Ialltoallw_c(big, counts, displs, types, big2, rcounts, rdispls, types, w, &rq_));
        else MPI_Alltoallw_c(big, counts, displs, types, big2, rcounts, rdispls, types, w);
        for (int j = 0; j < n; j++)
            CHECK(same(big2 + 2 * (n - 1 - j), 2, 100 * j + 10 * rank), "%salltoallw_c from %d", f, j);
        free(rcounts);
        free(rdispls);
    }

    /* User operations: MPI_Op_create_c (MPI_Count len) in collectives and Reduce_local_c;
     * MPI_Op_create (int len) through Reduce_local_c. */
    MPI_Op op_c, op_i;
    MPI_Op_create_c(sum_c, 1, &op_c);
    MPI_Op_create(max_int, 1, &op_i);
    fill(s, N, rank);
    memset(r, 0, sizeof r);
    MPI_Allreduce_c(s, r, N, MPI_INT, op_c, w);
    for (int i = 0; i < N; i++)
        CHECK(r[i] == n * (n - 1) / 2 + n * i, "Allreduce_c user op [%d] = %d", i, r[i]);
    fill(r, N, 1);
    MPI_Reduce_local_c(s, r, N, MPI_INT, op_c);
    CHECK(max_len_seen == N, "user op len %lld", (long long)max_len_seen);
    for (int i = 0; i < N; i++)
        CHECK(r[i] == rank + 1 + 2 * i, "Reduce_local_c user op [%d] = %d", i, r[i]);
    fill(r, N, 2);
    MPI_Reduce_local_c(s, r, N, MPI_INT, op_i);
    for (int i = 0; i < N; i++)
        CHECK(r[i] == (rank > 2 ? rank : 2) + i, "Reduce_local_c int user op [%d] = %d", i, r[i]);
    fill(r, N, 1);
    MPI_Reduce_local_c(s, r, N, MPI_INT, MPI_SUM);
    CHECK(r[3] == rank + 1 + 6, "Reduce_local_c MPI_SUM");
    MPI_Op_free(&op_c);
    MPI_Op_free(&op_i);

    free(big);
    free(big2);
    free(counts);
    free(displs);
    free(types);
}

static void datatypes(void) {
    MPI_Datatype t[10];
    MPI_Count sz, lb, ext;
    MPI_Count bl[2] = {1, 2}, dc[2] = {0, 3}, dbytes[2] = {0, 12};
    MPI_Datatype st[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Count sd[2] = {0, 8};
    MPI_Count sizes[2] = {4, 4}, subs[2] = {2, 2}, starts[2] = {1, 1};

    MPI_Type_contiguous_c(3, MPI_INT, &t[0]);
    MPI_Type_vector_c(2, 2, 3, MPI_INT, &t[1]);
    MPI_Type_create_hvector_c(2, 1, 16, MPI_INT, &t[2]);
    MPI_Type_indexed_c(2, bl, dc, MPI_INT, &t[3]);
    MPI_Type_create_hindexed_c(2, bl, dbytes, MPI_INT, &t[4]);
    MPI_Type_create_indexed_block_c(2, 2, dc, MPI_INT, &t[5]);
    MPI_Type_create_hindexed_block_c(2, 2, dbytes, MPI_INT, &t[6]);
    MPI_Type_create_struct_c(2, bl, sd, st, &t[7]);
    MPI_Type_create_subarray_c(2, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &t[8]);
    MPI_Type_create_resized_c(MPI_INT, -4, 12, &t[9]);
    MPI_Count want_size[10] = {12, 16, 8, 12, 12, 16, 16, 4 + 16, 16, 4};
    MPI_Count want_ext[10] = {12, 20, 20, 20, 20, 20, 20, 24, 64, 12};
    for (int i = 0; i < 10; i++) {
        MPI_Type_commit(&t[i]);
        MPI_Type_size_c(t[i], &sz);
        MPI_Type_get_extent_c(t[i], &lb, &ext);
        CHECK(sz == want_size[i], "type %d size %lld", i, (long long)sz);
        CHECK(ext == want_ext[i], "type %d extent %lld", i, (long long)ext);
    }
    MPI_Type_get_extent_c(t[9], &lb, &ext);
    CHECK(lb == -4, "resized lb %lld", (long long)lb);
    MPI_Type_get_true_extent_c(t[8], &lb, &ext);
    CHECK(lb == 20 && ext == 24, "subarray true extent %lld %lld", (long long)lb, (long long)ext);

    /* Pack_c / Unpack_c / Pack_size_c with the vector type. */
    int src[6] = {1, 2, 3, 4, 5, 6}, dst[6] = {0};
    char packed[64];
    MPI_Count psize, pos = 0;
    MPI_Pack_size_c(1, t[1], MPI_COMM_WORLD, &psize);
    CHECK(psize >= 16, "Pack_size_c %lld", (long long)psize);
    MPI_Pack_c(src, 1, t[1], packed, sizeof packed, &pos, MPI_COMM_WORLD);
    CHECK(pos == 16, "Pack_c position %lld", (long long)pos);
    pos = 0;
    MPI_Unpack_c(packed, sizeof packed, &pos, dst, 1, t[1], MPI_COMM_WORLD);
    CHECK(pos == 16 && dst[0] == 1 && dst[1] == 2 && dst[2] == 0 && dst[3] == 4 && dst[4] == 5,
          "Unpack_c");
    for (int i = 0; i < 10; i++)
        MPI_Type_free(&t[i]);
}

static void expect_count_error(int rc, const char *what) {
    int cls = -1;
    if (rc != MPI_SUCCESS)
        MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_COUNT, "%s: rc %d class %d, expected MPI_ERR_COUNT", what, rc, cls);
}

static void errors(void) {
    int v[N] = {0};
    MPI_Request req;
    MPI_Op op;
    MPI_Count counts[64];
    MPI_Aint displs[64] = {0};
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    expect_count_error(MPI_Send_c(v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), "Send_c -1");
    expect_count_error(MPI_Recv_c(v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "Recv_c -1");
    expect_count_error(MPI_Isend_c(v, -5, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), "Isend_c -5");
    expect_count_error(MPI_Ssend_c(v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), "Ssend_c -1");
    expect_count_error(MPI_Send_init_c(v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD, &req), "Send_init_c -1");
    expect_count_error(MPI_Bcast_c(v, -1, MPI_INT, 0, MPI_COMM_WORLD), "Bcast_c -1");
    expect_count_error(MPI_Allreduce_c(v, v + 2, -1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "Allreduce_c -1");
    for (int i = 0; i < size && i < 64; i++)
        counts[i] = i == 0 ? -1 : 1;
    expect_count_error(MPI_Allgatherv_c(v, 1, MPI_INT, v + 1, counts, displs, MPI_INT, MPI_COMM_WORLD),
                       "Allgatherv_c counts[0] -1");
    MPI_Op_create_c(sum_c, 1, &op);
    expect_count_error(MPI_Reduce_local_c(v, v + 2, -2, MPI_INT, op), "Reduce_local_c -2");
    MPI_Op_free(&op);
    /* Counts no message can have: more bytes than isize::MAX. */
    expect_count_error(MPI_Send_c(v, INT64_MAX / 4, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD),
                       "Send_c of 2^61 doubles");
    expect_count_error(MPI_Bcast_c(v, INT64_MAX / 2, MPI_INT, 0, MPI_COMM_WORLD),
                       "Bcast_c of 2^62 ints");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    if (size < 2) {
        printf("large_count needs at least 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    p2p();
    collectives();
    datatypes();
    errors();
    return finish();
}
