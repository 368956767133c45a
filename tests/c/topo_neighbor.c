/* Neighbour collectives on every kind of topology, blocking and non-blocking, int and _c
 * forms, checked element by element: cartesian grids (2-D and 3-D, periodic and not, a
 * periodic dimension of extent 1 where a rank is its own neighbour twice, PROC_NULL neighbours
 * leaving their blocks untouched), a graph ring (repeated neighbours at np 1 and 2), a
 * weighted adjacent distributed graph with a self loop, a general distributed graph, and a
 * strided receive datatype. */
#include "coll_util.h"

/* MPI_UNWEIGHTED is the ABI's sentinel (int *)10, which GCC takes for an array of size 0. */
#pragma GCC diagnostic ignored "-Wstringop-overread"
#pragma GCC diagnostic ignored "-Wstringop-overflow"

#define MAXD 8
#define UNTOUCHED (-7)

/* This rank's in- and out-neighbours, and for in-block i the index of the out-block its
 * sender filled for us. */
static int nin, nout, in[MAXD], out[MAXD], from[MAXD];

static void neighbours(MPI_Comm c) {
    int t;
    MPI_Topo_test(c, &t);
    if (t == MPI_CART) {
        int nd, me;
        MPI_Cartdim_get(c, &nd);
        MPI_Comm_rank(c, &me);
        nin = nout = 2 * nd;
        for (int d = 0; d < nd; d++) {
            MPI_Cart_shift(c, d, 1, &in[2 * d], &in[2 * d + 1]);
            out[2 * d] = in[2 * d];
            out[2 * d + 1] = in[2 * d + 1];
            /* What a rank sends towards -1 arrives on the receiver's +1 side. */
            from[2 * d] = 2 * d + 1;
            from[2 * d + 1] = 2 * d;
        }
        return;
    }
    if (t == MPI_GRAPH) {
        int me;
        MPI_Comm_rank(c, &me);
        MPI_Graph_neighbors_count(c, me, &nin);
        MPI_Graph_neighbors(c, me, MAXD, in);
        nout = nin;
        memcpy(out, in, sizeof in);
    } else {
        int w;
        MPI_Dist_graph_neighbors_count(c, &nin, &nout, &w);
        MPI_Dist_graph_neighbors(c, MAXD, in, MPI_UNWEIGHTED, MAXD, out, MPI_UNWEIGHTED);
    }
    /* Everyone's out-lists: the k-th block from s is s's k-th block addressed to us. */
    int n, me, mine[MAXD + 1], *all;
    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    all = malloc(sizeof(int) * (MAXD + 1) * n);
    mine[0] = nout;
    memcpy(mine + 1, out, sizeof(int) * MAXD);
    MPI_Allgather(mine, MAXD + 1, MPI_INT, all, MAXD + 1, MPI_INT, c);
    for (int i = 0; i < nin; i++) {
        int s = in[i], k = 0;
        for (int j = 0; j < i; j++)
            k += in[j] == s;
        int *so = all + s * (MAXD + 1);
        from[i] = -1;
        for (int j = 0; j < so[0]; j++)
            if (so[1 + j] == me && k-- == 0) {
                from[i] = j;
                break;
            }
    }
    free(all);
}

static int val(int src, int blk, int e) { return 10000 * src + 100 * blk + e; }

static void fill(int *b, int n) {
    for (int i = 0; i < n; i++)
        b[i] = UNTOUCHED;
}

/* Block i of recv (at stride `stride`, `cnt` elements) holds what in-neighbour i sent. */
static void expect(const char *what, const int *r, int stride, int cnt, int gather) {
    for (int i = 0; i < nin; i++)
        for (int e = 0; e < stride; e++) {
            int want = UNTOUCHED;
            if (in[i] != MPI_PROC_NULL && e < cnt)
                want = gather ? val(in[i], 0, e) : val(in[i], from[i], e);
            CHECK(r[i * stride + e] == want, "%s: block %d elem %d = %d, want %d (from %d)", what, i,
                  e, r[i * stride + e], want, in[i]);
        }
}

static void run(const char *name, MPI_Comm c) {
    int me, sb[MAXD * 3], rb[MAXD * 3], gb[3];
    char what[128];
    MPI_Comm_rank(c, &me);
    neighbours(c);
    for (int e = 0; e < 3; e++)
        gb[e] = val(me, 0, e);
    for (int j = 0; j < MAXD; j++)
        for (int e = 0; e < 3; e++)
            sb[j * 3 + e] = val(me, j, e);

    for (int nb = 0; nb < 2; nb++) {
        MPI_Request req;
        const char *f = nb ? "i" : "";
        /* allgather, 2 ints per block */
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_allgather(gb, 2, MPI_INT, rb, 2, MPI_INT, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_allgather(gb, 2, MPI_INT, rb, 2, MPI_INT, c);
        snprintf(what, sizeof what, "%s %sallgather", name, f);
        expect(what, rb, 2, 2, 1);

        /* allgather_c */
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_allgather_c(gb, 3, MPI_INT, rb, 3, MPI_INT, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_allgather_c(gb, 3, MPI_INT, rb, 3, MPI_INT, c);
        snprintf(what, sizeof what, "%s %sallgather_c", name, f);
        expect(what, rb, 3, 3, 1);

        /* allgatherv: 2 ints at a stride of 3 */
        int rc[MAXD], rd[MAXD];
        for (int i = 0; i < MAXD; i++) {
            rc[i] = 2;
            rd[i] = 3 * i;
        }
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_allgatherv(gb, 2, MPI_INT, rb, rc, rd, MPI_INT, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_allgatherv(gb, 2, MPI_INT, rb, rc, rd, MPI_INT, c);
        snprintf(what, sizeof what, "%s %sallgatherv", name, f);
        expect(what, rb, 3, 2, 1);

        /* allgather into a strided datatype: elements 0 and 2 of each 3 */
        MPI_Datatype vec;
        MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_allgather(gb, 2, MPI_INT, rb, 1, vec, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_allgather(gb, 2, MPI_INT, rb, 1, vec, c);
        for (int i = 0; i < nin; i++) {
            int ok = in[i] == MPI_PROC_NULL
                         ? rb[3 * i] == UNTOUCHED && rb[3 * i + 2] == UNTOUCHED
                         : rb[3 * i] == val(in[i], 0, 0) && rb[3 * i + 2] == val(in[i], 0, 1);
            CHECK(ok && rb[3 * i + 1] == UNTOUCHED, "%s %sallgather vector block %d: %d %d %d", name, f, i,
                  rb[3 * i], rb[3 * i + 1], rb[3 * i + 2]);
        }
        MPI_Type_free(&vec);

        /* alltoall, 3 ints per block */
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_alltoall(sb, 3, MPI_INT, rb, 3, MPI_INT, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_alltoall(sb, 3, MPI_INT, rb, 3, MPI_INT, c);
        snprintf(what, sizeof what, "%s %salltoall", name, f);
        expect(what, rb, 3, 3, 0);

        /* alltoall_c, 1 int per block */
        int sb1[MAXD], rb1[MAXD];
        for (int j = 0; j < MAXD; j++)
            sb1[j] = val(me, j, 0);
        fill(rb1, MAXD);
        if (nb) {
            MPI_Ineighbor_alltoall_c(sb1, 1, MPI_INT, rb1, 1, MPI_INT, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_alltoall_c(sb1, 1, MPI_INT, rb1, 1, MPI_INT, c);
        snprintf(what, sizeof what, "%s %salltoall_c", name, f);
        expect(what, rb1, 1, 1, 0);

        /* alltoallv: block j carries 1 + j % 2 ints, at stride 3 on both sides */
        int sc[MAXD], sd[MAXD], rcv[MAXD], rdv[MAXD];
        for (int j = 0; j < nout; j++) {
            sc[j] = 1 + j % 2;
            sd[j] = 3 * j;
        }
        for (int i = 0; i < nin; i++) {
            rcv[i] = in[i] == MPI_PROC_NULL ? 0 : 1 + from[i] % 2;
            rdv[i] = 3 * i;
        }
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rcv, rdv, MPI_INT, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rcv, rdv, MPI_INT, c);
        for (int i = 0; i < nin; i++)
            for (int e = 0; e < 3; e++) {
                int want = e < rcv[i] ? val(in[i], from[i], e) : UNTOUCHED;
                CHECK(rb[3 * i + e] == want, "%s %salltoallv block %d elem %d = %d want %d", name, f, i, e,
                      rb[3 * i + e], want);
            }

        /* alltoallw: byte displacements, a derived contiguous type on odd blocks */
        MPI_Datatype two;
        MPI_Type_contiguous(2, MPI_INT, &two);
        MPI_Type_commit(&two);
        MPI_Aint sdw[MAXD], rdw[MAXD];
        MPI_Datatype st[MAXD], rt[MAXD];
        int scw[MAXD], rcw[MAXD];
        for (int j = 0; j < nout; j++) {
            scw[j] = j % 2 ? 1 : 2;
            st[j] = j % 2 ? two : MPI_INT;
            sdw[j] = 3 * j * sizeof(int);
        }
        for (int i = 0; i < nin; i++) {
            rcw[i] = 2;
            rt[i] = MPI_INT;
            rdw[i] = 3 * i * sizeof(int);
        }
        fill(rb, MAXD * 3);
        if (nb) {
            MPI_Ineighbor_alltoallw(sb, scw, sdw, st, rb, rcw, rdw, rt, c, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else
            MPI_Neighbor_alltoallw(sb, scw, sdw, st, rb, rcw, rdw, rt, c);
        snprintf(what, sizeof what, "%s %salltoallw", name, f);
        expect(what, rb, 3, 2, 0);
        MPI_Type_free(&two);
    }

    /* Several non-blocking ones in flight at once, completed together. */
    int r1[MAXD * 3], r2[MAXD * 3];
    MPI_Request rq[2];
    fill(r1, MAXD * 3);
    fill(r2, MAXD * 3);
    MPI_Ineighbor_alltoall(sb, 3, MPI_INT, r1, 3, MPI_INT, c, &rq[0]);
    MPI_Ineighbor_allgather(gb, 3, MPI_INT, r2, 3, MPI_INT, c, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    snprintf(what, sizeof what, "%s overlapping alltoall", name);
    expect(what, r1, 3, 3, 0);
    snprintf(what, sizeof what, "%s overlapping allgather", name);
    expect(what, r2, 3, 3, 1);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Comm c;

    int d2[2] = {0, 0}, p2[2] = {1, 0};
    MPI_Dims_create(size, 2, d2);
    MPI_Cart_create(MPI_COMM_WORLD, 2, d2, p2, 0, &c);
    run("cart 2-D", c);
    MPI_Comm_free(&c);

    int d3[3] = {0, 0, 0}, p3[3] = {0, 1, 1};
    MPI_Dims_create(size, 3, d3);
    MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 0, &c);
    run("cart 3-D", c);
    MPI_Comm_free(&c);

    int d1[2] = {1, size}, p1[2] = {1, 1};
    MPI_Cart_create(MPI_COMM_WORLD, 2, d1, p1, 0, &c);
    run("cart 1 x n periodic", c);
    MPI_Comm_free(&c);

    int idx[64], edges[128], ne = 0;
    for (int i = 0; i < size; i++) {
        edges[ne++] = (i + 1) % size;
        edges[ne++] = (i - 1 + size) % size;
        idx[i] = ne;
    }
    MPI_Graph_create(MPI_COMM_WORLD, size, idx, edges, 0, &c);
    run("graph ring", c);
    MPI_Comm_free(&c);

    int src[3] = {(rank - 1 + size) % size, (rank - 2 + 2 * size) % size, rank};
    int dst[3] = {(rank + 1) % size, (rank + 2) % size, rank};
    int w[3] = {1, 2, 3};
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 3, src, w, 3, dst, w, MPI_INFO_NULL, 0, &c);
    run("dist graph adjacent", c);
    MPI_Comm_free(&c);

    /* General: every rank gives its own out-edges to r+1 and r+3; rank 0 also r -> r for all. */
    int gs[2 + 64], gdeg[2 + 64], gd[2 * 2 + 64], k = 0, m = 0;
    gs[k] = rank;
    gdeg[k++] = 2;
    gd[m++] = (rank + 1) % size;
    gd[m++] = (rank + 3) % size;
    if (rank == 0)
        for (int i = 0; i < size; i++) {
            gs[k] = i;
            gdeg[k++] = 1;
            gd[m++] = i;
        }
    MPI_Dist_graph_create(MPI_COMM_WORLD, k, gs, gdeg, gd, MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &c);
    run("dist graph general", c);
    MPI_Comm_free(&c);

    return finish();
}
