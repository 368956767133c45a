/* Process topologies: cartesian (2-D and 3-D, periodic and not: coords/rank round trip, shift,
 * sub, get, map), MPI_Dims_create, graphs and distributed graphs (adjacent and general,
 * weighted and not), what Comm_dup/split do with a topology, and the error classes. */
#include "coll_util.h"

/* MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are small sentinel pointers (the ABI's (int *)10 and
 * 11), which GCC takes for arrays of size 0. */
#pragma GCC diagnostic ignored "-Wstringop-overread"

static int eclass(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static void check_cart(MPI_Comm cart, int ndims, const int *dims, const int *periods) {
    int t, nd, r, n, d[3], p[3], c[3];
    MPI_Topo_test(cart, &t);
    CHECK(t == MPI_CART, "topo_test %d", t);
    MPI_Cartdim_get(cart, &nd);
    CHECK(nd == ndims, "cartdim %d", nd);
    MPI_Comm_rank(cart, &r);
    MPI_Comm_size(cart, &n);
    MPI_Cart_get(cart, 3, d, p, c);
    int prod = 1;
    for (int i = 0; i < ndims; i++) {
        CHECK(d[i] == dims[i] && !!p[i] == !!periods[i], "cart_get dim %d: %d %d", i, d[i], p[i]);
        prod *= dims[i];
    }
    CHECK(prod == n, "size %d vs %d", n, prod);
    /* Row-major coordinates; every rank round-trips. */
    for (int q = 0; q < n; q++) {
        int cc[3], back, rest = q;
        MPI_Cart_coords(cart, q, 3, cc);
        for (int i = ndims - 1; i >= 0; i--) {
            CHECK(cc[i] == rest % dims[i], "coords of %d dim %d: %d", q, i, cc[i]);
            rest /= dims[i];
        }
        MPI_Cart_rank(cart, cc, &back);
        CHECK(back == q, "rank of coords of %d: %d", q, back);
    }
    MPI_Cart_coords(cart, r, 3, c);
    for (int i = 0; i < ndims; i++) {
        int src, dst, cc[3];
        MPI_Cart_shift(cart, i, 1, &src, &dst);
        memcpy(cc, c, sizeof cc);
        if (c[i] + 1 < dims[i] || periods[i]) {
            cc[i] = (c[i] + 1) % dims[i];
            int want;
            MPI_Cart_rank(cart, cc, &want);
            CHECK(dst == want, "shift +1 dim %d: %d want %d", i, dst, want);
        } else {
            CHECK(dst == MPI_PROC_NULL, "shift +1 dim %d off the edge: %d", i, dst);
        }
        memcpy(cc, c, sizeof cc);
        if (c[i] > 0 || periods[i]) {
            cc[i] = (c[i] - 1 + dims[i]) % dims[i];
            int want;
            MPI_Cart_rank(cart, cc, &want);
            CHECK(src == want, "shift source dim %d: %d want %d", i, src, want);
        } else {
            CHECK(src == MPI_PROC_NULL, "shift source dim %d off the edge: %d", i, src);
        }
        /* A shift by -1 swaps them. */
        int s2, d2;
        MPI_Cart_shift(cart, i, -1, &s2, &d2);
        CHECK(s2 == dst && d2 == src, "shift -1 dim %d", i);
    }
    /* Periodic dimensions wrap in Cart_rank. */
    if (periods[0]) {
        int cc[3], w, q;
        memcpy(cc, c, sizeof cc);
        cc[0] = c[0] + dims[0];
        MPI_Cart_rank(cart, cc, &w);
        CHECK(w == r, "wrapped rank %d", w);
        (void)q;
    }
}

static void cart_tests(void) {
    int dims[3] = {0, 0, 0}, periods[3] = {1, 0, 1};
    MPI_Comm cart, dup, sub, split;

    MPI_Dims_create(size, 2, dims);
    CHECK(dims[0] * dims[1] == size && dims[0] >= dims[1], "dims_create %d %d", dims[0], dims[1]);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart);
    check_cart(cart, 2, dims, periods);

    /* Dup keeps the topology; split does not. */
    MPI_Comm_dup(cart, &dup);
    check_cart(dup, 2, dims, periods);
    MPI_Comm_split(cart, 0, rank, &split);
    int t;
    MPI_Topo_test(split, &t);
    CHECK(t == MPI_UNDEFINED, "split keeps no topology: %d", t);
    MPI_Comm_free(&split);
    MPI_Comm_free(&dup);

    /* Cart_sub keeping dimension 1: rows. */
    int remain[2] = {0, 1}, c[2], sr, ss;
    MPI_Cart_sub(cart, remain, &sub);
    MPI_Cart_coords(cart, rank, 2, c);
    MPI_Comm_rank(sub, &sr);
    MPI_Comm_size(sub, &ss);
    CHECK(ss == dims[1] && sr == c[1], "sub rank %d size %d", sr, ss);
    check_cart(sub, 1, &dims[1], &periods[1]);
    MPI_Comm_free(&sub);
    /* Keeping nothing: a 0-dimensional grid of one rank. */
    int none[2] = {0, 0};
    MPI_Cart_sub(cart, none, &sub);
    MPI_Comm_size(sub, &ss);
    int nd;
    MPI_Cartdim_get(sub, &nd);
    CHECK(ss == 1 && nd == 0, "empty sub: size %d ndims %d", ss, nd);
    MPI_Comm_free(&sub);
    MPI_Comm_free(&cart);

    /* 3-D, not all periodic. */
    int d3[3] = {0, 0, 0}, p3[3] = {0, 1, 0};
    MPI_Dims_create(size, 3, d3);
    MPI_Cart_create(MPI_COMM_WORLD, 3, d3, p3, 1, &cart);
    check_cart(cart, 3, d3, p3);
    int keep[3] = {1, 0, 1};
    MPI_Cart_sub(cart, keep, &sub);
    int sd[2] = {d3[0], d3[2]}, sp[2] = {p3[0], p3[2]};
    check_cart(sub, 2, sd, sp);
    MPI_Comm_free(&sub);
    MPI_Comm_free(&cart);

    /* A grid smaller than the communicator: the rest get MPI_COMM_NULL. */
    int one[1] = {size > 1 ? size - 1 : 1}, per[1] = {0};
    MPI_Cart_create(MPI_COMM_WORLD, 1, one, per, 0, &cart);
    if (rank < one[0]) {
        CHECK(cart != MPI_COMM_NULL, "rank %d in the grid", rank);
        check_cart(cart, 1, one, per);
        MPI_Comm_free(&cart);
    } else {
        CHECK(cart == MPI_COMM_NULL, "rank %d outside the grid", rank);
    }
    int nr;
    MPI_Cart_map(MPI_COMM_WORLD, 1, one, per, &nr);
    CHECK(nr == (rank < one[0] ? rank : MPI_UNDEFINED), "cart_map %d", nr);
    /* An empty dimension: no grid node at all (rsmpi's cartesian_map example at np < 4). */
    int empty[2] = {2, 0}, per2[2] = {0, 0};
    CHECK(MPI_Cart_map(MPI_COMM_WORLD, 2, empty, per2, &nr) == MPI_SUCCESS && nr == MPI_UNDEFINED,
          "cart_map of an empty grid gave %d", nr);

    /* Dims_create with fixed entries and known answers. */
    int a[2] = {0, 0};
    MPI_Dims_create(6, 2, a);
    CHECK(a[0] == 3 && a[1] == 2, "dims 6: %d %d", a[0], a[1]);
    int b[3] = {0, 3, 0};
    MPI_Dims_create(6, 3, b);
    CHECK(b[0] == 2 && b[1] == 3 && b[2] == 1, "dims 6 fixed: %d %d %d", b[0], b[1], b[2]);
    int e[3] = {0, 0, 0};
    MPI_Dims_create(24, 3, e);
    CHECK(e[0] == 4 && e[1] == 3 && e[2] == 2, "dims 24: %d %d %d", e[0], e[1], e[2]);
}

static void graph_tests(void) {
    /* A ring with a chord from 0 to everyone (symmetric): node i's neighbours. */
    int n = size, idx[64], edges[256], ne = 0;
    for (int i = 0; i < n; i++) {
        edges[ne++] = (i + 1) % n;
        edges[ne++] = (i - 1 + n) % n;
        idx[i] = ne;
    }
    MPI_Comm g;
    MPI_Graph_create(MPI_COMM_WORLD, n, idx, edges, 0, &g);
    int t, nn, nedges, cnt, nb[8], gi[64], ge[256];
    MPI_Topo_test(g, &t);
    CHECK(t == MPI_GRAPH, "graph topo_test %d", t);
    MPI_Graphdims_get(g, &nn, &nedges);
    CHECK(nn == n && nedges == 2 * n, "graphdims %d %d", nn, nedges);
    MPI_Graph_get(g, 64, 256, gi, ge);
    for (int i = 0; i < n; i++)
        CHECK(gi[i] == idx[i], "index[%d] %d", i, gi[i]);
    for (int i = 0; i < ne; i++)
        CHECK(ge[i] == edges[i], "edges[%d] %d", i, ge[i]);
    for (int q = 0; q < n; q++) {
        MPI_Graph_neighbors_count(g, q, &cnt);
        CHECK(cnt == 2, "neighbors_count %d", cnt);
        MPI_Graph_neighbors(g, q, 8, nb);
        CHECK(nb[0] == (q + 1) % n && nb[1] == (q - 1 + n) % n, "neighbors of %d: %d %d", q, nb[0], nb[1]);
    }
    int nr;
    MPI_Graph_map(MPI_COMM_WORLD, n, idx, edges, &nr);
    CHECK(nr == rank, "graph_map %d", nr);
    MPI_Comm_free(&g);

    /* Dist graph, adjacent, weighted: to r+1 and r+2, from r-1 and r-2. */
    int src[2] = {(rank - 1 + n) % n, (rank - 2 + 2 * n) % n};
    int dst[2] = {(rank + 1) % n, (rank + 2) % n};
    int sw[2] = {100 + src[0], 200 + src[1]}, dw[2] = {100 + rank, 200 + rank};
    MPI_Comm dg;
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, sw, 2, dst, dw, MPI_INFO_NULL, 0, &dg);
    int indeg, outdeg, weighted, s2[2], sw2[2], d2[2], dw2[2];
    MPI_Topo_test(dg, &t);
    CHECK(t == MPI_DIST_GRAPH, "dist topo_test %d", t);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2 && weighted, "counts %d %d %d", indeg, outdeg, weighted);
    MPI_Dist_graph_neighbors(dg, 2, s2, sw2, 2, d2, dw2);
    for (int i = 0; i < 2; i++)
        CHECK(s2[i] == src[i] && sw2[i] == sw[i] && d2[i] == dst[i] && dw2[i] == dw[i],
              "adjacent neighbour %d: %d/%d %d/%d", i, s2[i], sw2[i], d2[i], dw2[i]);
    MPI_Comm dgd;
    MPI_Comm_dup(dg, &dgd);
    MPI_Dist_graph_neighbors_count(dgd, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2, "dup keeps the dist graph");
    MPI_Comm_free(&dgd);
    MPI_Comm_free(&dg);

    /* Unweighted, with an empty side. */
    MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, src, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED,
                                   MPI_INFO_NULL, 0, &dg);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 1 && outdeg == 0 && !weighted, "unweighted counts %d %d %d", indeg, outdeg, weighted);
    MPI_Comm_free(&dg);

    /* General: each rank names the edge into itself from r+1 (weight 7*src) and, at rank 0
     * only, every edge i -> (i+3)%n for the whole graph. */
    int gs[1 + 64], gd[1 + 64], gdeg[1 + 64], gw[1 + 64], k = 0;
    gs[k] = (rank + 1) % n; gdeg[k] = 1; gd[k] = rank; gw[k] = 7 * gs[k]; k++;
    if (rank == 0)
        for (int i = 0; i < n; i++) {
            gs[k] = i; gdeg[k] = 1; gd[k] = (i + 3) % n; gw[k] = 7 * i; k++;
        }
    MPI_Dist_graph_create(MPI_COMM_WORLD, k, gs, gdeg, gd, gw, MPI_INFO_NULL, 0, &dg);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == 2 && outdeg == 2 && weighted, "general counts %d %d %d", indeg, outdeg, weighted);
    int s3[4], w3[4], d3[4], x3[4];
    MPI_Dist_graph_neighbors(dg, 4, s3, w3, 4, d3, x3);
    /* In-edges: from (r+1) and from (r-3); out-edges: to (r-1) and to (r+3); any order. */
    int want_in[2] = {(rank + 1) % n, (rank - 3 + 3 * n) % n};
    int want_out[2] = {(rank - 1 + n) % n, (rank + 3) % n};
    for (int i = 0; i < 2; i++) {
        int found = 0;
        for (int j = 0; j < 2; j++)
            found += s3[j] == want_in[i] && w3[j] == 7 * want_in[i];
        CHECK(found >= 1, "general in-edge from %d", want_in[i]);
        found = 0;
        for (int j = 0; j < 2; j++)
            found += d3[j] == want_out[i] && x3[j] == 7 * rank;
        CHECK(found >= 1, "general out-edge to %d", want_out[i]);
    }
    MPI_Comm_free(&dg);

    /* General, unweighted, nothing given by anyone but rank 0. */
    int one_s = 0, one_d = n - 1, one_deg = 1;
    MPI_Dist_graph_create(MPI_COMM_WORLD, rank == 0 ? 1 : 0, &one_s, &one_deg, &one_d, MPI_UNWEIGHTED,
                          MPI_INFO_NULL, 0, &dg);
    MPI_Dist_graph_neighbors_count(dg, &indeg, &outdeg, &weighted);
    CHECK(indeg == (rank == n - 1) && outdeg == (rank == 0) && !weighted, "single edge %d %d %d", indeg, outdeg, weighted);
    MPI_Comm_free(&dg);
}

static void error_tests(void) {
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int dims[2] = {size + 1, 1}, periods[2] = {0, 0}, c[2], x, y;
    MPI_Comm bad = MPI_COMM_NULL;
    CHECK(eclass(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &bad)) == MPI_ERR_ARG, "grid too large");
    dims[0] = -1;
    CHECK(eclass(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &bad)) == MPI_ERR_DIMS, "negative extent");
    CHECK(eclass(MPI_Cart_create(MPI_COMM_WORLD, -1, dims, periods, 0, &bad)) == MPI_ERR_DIMS, "negative ndims");
    CHECK(eclass(MPI_Cart_coords(MPI_COMM_WORLD, 0, 2, c)) == MPI_ERR_TOPOLOGY, "coords without a topology");
    CHECK(eclass(MPI_Cartdim_get(MPI_COMM_WORLD, &x)) == MPI_ERR_TOPOLOGY, "cartdim without a topology");
    CHECK(eclass(MPI_Graph_neighbors_count(MPI_COMM_WORLD, 0, &x)) == MPI_ERR_TOPOLOGY, "graph call without a topology");
    CHECK(eclass(MPI_Dist_graph_neighbors_count(MPI_COMM_WORLD, &x, &y, &x)) == MPI_ERR_TOPOLOGY, "dist graph call without a topology");
    int buf[4];
    CHECK(eclass(MPI_Neighbor_allgather(buf, 1, MPI_INT, buf, 1, MPI_INT, MPI_COMM_WORLD)) == MPI_ERR_TOPOLOGY,
          "neighbour collective without a topology");
    int fixed[2] = {0, 3};
    if (size % 3 != 0) {
        int s = size;
        CHECK(eclass(MPI_Dims_create(s, 2, fixed)) == MPI_ERR_DIMS, "dims_create not divisible");
    }
    int neg[2] = {-2, 0};
    CHECK(eclass(MPI_Dims_create(4, 2, neg)) == MPI_ERR_DIMS, "dims_create negative entry");

    MPI_Comm cart;
    int d1[1] = {size}, p1[1] = {0};
    MPI_Cart_create(MPI_COMM_WORLD, 1, d1, p1, 0, &cart);
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    CHECK(eclass(MPI_Cart_coords(cart, size, 1, c)) == MPI_ERR_RANK, "coords of a rank outside");
    CHECK(eclass(MPI_Cart_shift(cart, 1, 1, &x, &y)) == MPI_ERR_DIMS, "shift in a missing dimension");
    c[0] = size;
    CHECK(eclass(MPI_Cart_rank(cart, c, &x)) == MPI_ERR_ARG, "coordinate outside a non-periodic dimension");
    CHECK(eclass(MPI_Graph_neighbors(cart, 0, 4, c)) == MPI_ERR_TOPOLOGY, "graph call on a cartesian communicator");
    CHECK(eclass(MPI_Cart_coords(cart, 0, 0, c)) == MPI_ERR_ARG, "maxdims too small");
    MPI_Comm_free(&cart);

    int idx[2] = {1, 0}, e[1] = {0};
    CHECK(eclass(MPI_Graph_create(MPI_COMM_WORLD, 1, idx, e, 0, &bad)) == MPI_SUCCESS, "one-node graph");
    if (bad != MPI_COMM_NULL)
        MPI_Comm_free(&bad);
    idx[0] = 1;
    e[0] = 5 + size;
    CHECK(eclass(MPI_Graph_create(MPI_COMM_WORLD, 1, idx, e, 0, &bad)) == MPI_ERR_ARG, "edge to a missing node");
    int src = size;
    CHECK(eclass(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &src, MPI_UNWEIGHTED, 0, NULL, MPI_UNWEIGHTED,
                                                MPI_INFO_NULL, 0, &bad)) == MPI_ERR_RANK, "dist graph source outside");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    cart_tests();
    graph_tests();
    error_tests();
    return finish();
}
