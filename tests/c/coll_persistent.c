/* Persistent collectives (MPI-4 MPI_*_init): every one of the 17, plus the 5 neighbour ones
 * on a ring, each started several times with new data between runs (Start, Startall), every
 * value checked; Wait leaves the request allocated and inactive, Request_free frees it; runs
 * match by init order whatever order ranks start them in. */
#include "coll_util.h"

#define RUNS 4
#define N 5

static int val(int r, int i, int run) { return 1000 * run + 10 * r + i; }

static void barrier_bcast(void) {
    MPI_Request req[2];
    int buf[N];
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Bcast_init(buf, N, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    for (int run = 0; run < RUNS; run++) {
        for (int i = 0; i < N; i++)
            buf[i] = rank == size - 1 ? val(0, i, run) : -1;
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++)
            CHECK(buf[i] == val(0, i, run), "bcast run %d [%d] = %d", run, i, buf[i]);
        /* Inactive again: Test says done at once, the handle stays. */
        int flag = 0;
        MPI_Test(&req[1], &flag, MPI_STATUS_IGNORE);
        CHECK(flag && req[1] != MPI_REQUEST_NULL, "inactive bcast request");
    }
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
    CHECK(req[0] == MPI_REQUEST_NULL && req[1] == MPI_REQUEST_NULL, "freed");
}

static void reductions(void) {
    int s[N] = {0}, r_red[N], r_all[N], r_scan[N], r_ex[N], r_rsb[N], r_rs[N * 8];
    int sbig[N * 8];
    int counts[8];
    MPI_Request req[6];
    for (int i = 0; i < size; i++)
        counts[i] = i % 2 + 1;
    int total = 0;
    for (int i = 0; i < size; i++)
        total += counts[i];
    MPI_Reduce_init(s, r_red, N, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Allreduce_init(s, r_all, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    MPI_Scan_init(s, r_scan, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]);
    MPI_Exscan_init(s, r_ex, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req[3]);
    MPI_Reduce_scatter_block_init(sbig, r_rsb, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &req[4]);
    MPI_Reduce_scatter_init(sbig, r_rs, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL,
                            &req[5]);
    for (int run = 0; run < RUNS; run++) {
        for (int i = 0; i < N; i++)
            s[i] = val(rank, i, run);
        for (int i = 0; i < total; i++)
            sbig[i] = rank * 100 + i + run;
        for (int k = 0; k < 6; k++)
            MPI_Start(&req[k]);
        MPI_Waitall(6, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++) {
            int sum = 0, pre = 0;
            for (int r = 0; r < size; r++)
                sum += val(r, i, run);
            for (int r = 0; r < rank; r++)
                pre += val(r, i, run);
            if (rank == 0)
                CHECK(r_red[i] == sum, "reduce run %d [%d] = %d, want %d", run, i, r_red[i], sum);
            CHECK(r_all[i] == val(size - 1, i, run), "allreduce run %d [%d] = %d", run, i, r_all[i]);
            CHECK(r_scan[i] == pre + val(rank, i, run), "scan run %d [%d] = %d", run, i, r_scan[i]);
            if (rank > 0)
                CHECK(r_ex[i] == pre, "exscan run %d [%d] = %d, want %d", run, i, r_ex[i], pre);
        }
        int want = 0;
        for (int r = 0; r < size; r++)
            want += r * 100 + rank + run;
        CHECK(r_rsb[0] == want, "reduce_scatter_block run %d = %d, want %d", run, r_rsb[0], want);
        int off = 0;
        for (int r = 0; r < rank; r++)
            off += counts[r];
        for (int j = 0; j < counts[rank]; j++) {
            int w = 0;
            for (int r = 0; r < size; r++)
                w += r * 100 + off + j + run;
            CHECK(r_rs[j] == w, "reduce_scatter run %d [%d] = %d, want %d", run, j, r_rs[j], w);
        }
    }
    for (int k = 0; k < 6; k++)
        MPI_Request_free(&req[k]);
}

static void gathers(void) {
    int s[N] = {0}, g[N * 8], ag[N * 8], agv[N * 8], sc[N], scv[N], a2a[8], a2av[8], a2aw[8];
    int sa2a[8], rcounts[8], displs[8], ones[8], idx[8], bytes_d[8];
    MPI_Datatype types[8];
    MPI_Request req[9];
    for (int i = 0; i < size; i++) {
        rcounts[i] = N;
        displs[i] = N * i;
        ones[i] = 1;
        idx[i] = i;
        bytes_d[i] = i * (int)sizeof(int);
        types[i] = MPI_INT;
    }
    int root = size / 2;
    MPI_Gather_init(s, N, MPI_INT, g, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Gatherv_init(s, N, MPI_INT, g, rcounts, displs, MPI_INT, root, MPI_COMM_WORLD,
                     MPI_INFO_NULL, &req[1]);
    MPI_Allgather_init(s, N, MPI_INT, ag, N, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]);
    MPI_Allgatherv_init(s, N, MPI_INT, agv, rcounts, displs, MPI_INT, MPI_COMM_WORLD,
                        MPI_INFO_NULL, &req[3]);
    MPI_Scatter_init(g, N, MPI_INT, sc, N, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &req[4]);
    MPI_Scatterv_init(g, rcounts, displs, MPI_INT, scv, N, MPI_INT, root, MPI_COMM_WORLD,
                      MPI_INFO_NULL, &req[5]);
    MPI_Alltoall_init(sa2a, 1, MPI_INT, a2a, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &req[6]);
    MPI_Alltoallv_init(sa2a, ones, idx, MPI_INT, a2av, ones, idx, MPI_INT, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[7]);
    MPI_Alltoallw_init(sa2a, ones, bytes_d, types, a2aw, ones, bytes_d, types, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &req[8]);
    for (int run = 0; run < RUNS; run++) {
        for (int i = 0; i < N; i++)
            s[i] = val(rank, i, run);
        for (int i = 0; i < size; i++)
            sa2a[i] = 100 * rank + i + run;
        memset(ag, 0, sizeof ag);
        memset(agv, 0, sizeof agv);
        /* gather then scatter back the same blocks (one at a time: they share g) */
        MPI_Start(&req[0]);
        MPI_Wait(&req[0], MPI_STATUS_IGNORE);
        if (rank == root)
            for (int r = 0; r < size; r++)
                for (int i = 0; i < N; i++)
                    CHECK(g[r * N + i] == val(r, i, run), "gather run %d", run);
        MPI_Start(&req[4]);
        MPI_Wait(&req[4], MPI_STATUS_IGNORE);
        if (rank == root)
            memset(g, 0, sizeof g);
        MPI_Start(&req[1]);
        MPI_Wait(&req[1], MPI_STATUS_IGNORE);
        if (rank == root)
            for (int r = 0; r < size; r++)
                for (int i = 0; i < N; i++)
                    CHECK(g[r * N + i] == val(r, i, run), "gatherv run %d", run);
        MPI_Start(&req[5]);
        MPI_Wait(&req[5], MPI_STATUS_IGNORE);
        MPI_Startall(5, &req[2] /* allgather(v) */ + 0);
        /* req[2], req[3] allgathers, req[4], req[5] are inactive again, req[6] alltoall */
        MPI_Waitall(5, &req[2], MPI_STATUSES_IGNORE);
        MPI_Startall(2, &req[7]);
        MPI_Waitall(2, &req[7], MPI_STATUSES_IGNORE);
        for (int i = 0; i < N; i++) {
            CHECK(sc[i] == val(rank, i, run), "scatter run %d [%d] = %d", run, i, sc[i]);
            CHECK(scv[i] == val(rank, i, run), "scatterv run %d [%d] = %d", run, i, scv[i]);
        }
        for (int r = 0; r < size; r++) {
            for (int i = 0; i < N; i++) {
                CHECK(ag[r * N + i] == val(r, i, run), "allgather run %d", run);
                CHECK(agv[r * N + i] == val(r, i, run), "allgatherv run %d", run);
            }
            int w = 100 * r + rank + run;
            CHECK(a2a[r] == w, "alltoall run %d [%d] = %d, want %d", run, r, a2a[r], w);
            CHECK(a2av[r] == w, "alltoallv run %d [%d] = %d, want %d", run, r, a2av[r], w);
            CHECK(a2aw[r] == w, "alltoallw run %d [%d] = %d, want %d", run, r, a2aw[r], w);
        }
    }
    for (int k = 0; k < 9; k++)
        MPI_Request_free(&req[k]);
}

static void neighbours(void) {
    MPI_Comm ring;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring);
    int left, right;
    MPI_Cart_shift(ring, 0, 1, &left, &right);
    int s[2], ag[2], agv[2], a2a[2], a2av[2], a2aw[2];
    int two[2] = {1, 1}, d[2] = {0, 1};
    MPI_Aint bd[2] = {0, sizeof(int)};
    MPI_Datatype t[2] = {MPI_INT, MPI_INT};
    MPI_Request req[5];
    MPI_Neighbor_allgather_init(s, 1, MPI_INT, ag, 1, MPI_INT, ring, MPI_INFO_NULL, &req[0]);
    MPI_Neighbor_allgatherv_init(s, 1, MPI_INT, agv, two, d, MPI_INT, ring, MPI_INFO_NULL,
                                 &req[1]);
    MPI_Neighbor_alltoall_init(s, 1, MPI_INT, a2a, 1, MPI_INT, ring, MPI_INFO_NULL, &req[2]);
    MPI_Neighbor_alltoallv_init(s, two, d, MPI_INT, a2av, two, d, MPI_INT, ring, MPI_INFO_NULL,
                                &req[3]);
    MPI_Neighbor_alltoallw_init(s, two, bd, t, a2aw, two, bd, t, ring, MPI_INFO_NULL, &req[4]);
    for (int run = 0; run < RUNS; run++) {
        s[0] = 10 * rank + run;     /* to the left */
        s[1] = 10 * rank + 5 + run; /* to the right */
        MPI_Startall(5, req);
        MPI_Waitall(5, req, MPI_STATUSES_IGNORE);
        /* allgather: my whole s[0] from each; blocks in order (left, right) */
        CHECK(ag[0] == 10 * left + run && ag[1] == 10 * right + run,
              "neighbor_allgather run %d: %d %d", run, ag[0], ag[1]);
        CHECK(agv[0] == 10 * left + run && agv[1] == 10 * right + run,
              "neighbor_allgatherv run %d: %d %d", run, agv[0], agv[1]);
        /* alltoall: from the left its right block, from the right its left block */
        int wl = 10 * left + 5 + run, wr = 10 * right + run;
        CHECK(a2a[0] == wl && a2a[1] == wr, "neighbor_alltoall run %d: %d %d", run, a2a[0], a2a[1]);
        CHECK(a2av[0] == wl && a2av[1] == wr, "neighbor_alltoallv run %d", run);
        CHECK(a2aw[0] == wl && a2aw[1] == wr, "neighbor_alltoallw run %d", run);
    }
    for (int k = 0; k < 5; k++)
        MPI_Request_free(&req[k]);
    MPI_Comm_free(&ring);
}

/* Runs match by init order: ranks start two persistent collectives in different orders. */
static void start_order(void) {
    static int a[2]; /* static: the run freed while active below may write after we return */
    MPI_Request req[3];
    MPI_Bcast_init(&a[0], 1, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    MPI_Bcast_init(&a[1], 1, MPI_INT, size - 1, MPI_COMM_WORLD, MPI_INFO_NULL, &req[2]);
    for (int run = 0; run < RUNS; run++) {
        a[0] = rank == 0 ? 42 + run : -1;
        a[1] = rank == size - 1 ? 77 + run : -1;
        for (int k = 0; k < 3; k++) {
            int i = rank % 2 ? 2 - k : (k + run) % 3;
            MPI_Start(&req[i]);
        }
        /* a blocking collective in between takes its own, later tag */
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Waitall(3, req, MPI_STATUSES_IGNORE);
        CHECK(a[0] == 42 + run && a[1] == 77 + run, "start order run %d: %d %d", run, a[0], a[1]);
    }
    /* freed while active: the run goes on and completes in the background */
    a[0] = rank == 0 ? 99 : -1;
    MPI_Start(&req[0]);
    MPI_Request_free(&req[0]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request_free(&req[1]);
    MPI_Request_free(&req[2]);
    int b = rank == 0 ? 5 : -1;
    MPI_Bcast(&b, 1, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK(b == 5, "bcast after freeing an active persistent bcast");
}

static void large_count_forms(void) {
    MPI_Count n = N;
    int buf[N];
    MPI_Request req;
    MPI_Bcast_init_c(buf, n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < N; i++)
            buf[i] = rank == 0 ? val(7, i, run) : 0;
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < N; i++)
            CHECK(buf[i] == val(7, i, run), "bcast_c run %d", run);
    }
    MPI_Request_free(&req);
    /* bad arguments are refused at init */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Bcast_init(buf, N, MPI_INT, size, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    int cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT, "bad root: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    if (size > 8) {
        if (rank == 0)
            printf(" No Errors\n");
        MPI_Finalize();
        return 0;
    }
    barrier_bcast();
    reductions();
    gathers();
    neighbours();
    start_order();
    large_count_forms();
    return finish();
}
