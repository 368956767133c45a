/* Derived datatypes with holes, negative displacements and resized extents in every kind of
 * collective (blocking, I-, in place), with different send and receive types of the same type
 * signature (6 ints per block: 2 vectors of 3, 3 two-int hindexed, 6 MPI_INT). Every data int
 * is checked, and so is every hole: it must still hold the sentinel. */
#include "coll_util.h"

#define PAD 4
#define SENT -7
#define PER 6 /* ints per block */

typedef struct {
    MPI_Datatype t;
    int n, ext, off[3];
    const char *name;
} T;

static T ty[4];

static int cnt(const T *t) { return PER / t->n; }
static int *alloc(const T *t, int nelem) {
    int len = nelem * t->ext + 2 * PAD;
    int *b = xmalloc(len * sizeof(int));
    for (int i = 0; i < len; i++)
        b[i] = SENT;
    return b;
}
static int *base(int *b) { return b + PAD; }
/* The j-th data int of a buffer of t. */
static int *at(const T *t, int *b, int j) {
    return b + PAD + (j / t->n) * t->ext + t->off[j % t->n];
}
/* Every int that is not data is still the sentinel. */
static void holes(const T *t, int *b, int nelem, const char *what) {
    int len = nelem * t->ext + 2 * PAD;
    char *data = calloc(len, 1);
    for (int j = 0; j < nelem * t->n; j++)
        data[at(t, b, j) - b] = 1;
    for (int i = 0; i < len; i++)
        CHECK(data[i] || b[i] == SENT, "%s (%s): hole %d overwritten with %d", what, t->name,
              i - PAD, b[i]);
    free(data);
}

static void make_types(void) {
    MPI_Datatype v, rv, neg;
    MPI_Type_vector(3, 1, 2, MPI_INT, &v); /* ints at 0, 2, 4; extent 5 */
    MPI_Type_commit(&v);
    MPI_Datatype tmp;
    MPI_Type_vector(3, 1, 2, MPI_INT, &tmp);
    MPI_Type_create_resized(tmp, 0, 6 * sizeof(int), &rv); /* extent 6 */
    MPI_Type_free(&tmp);
    MPI_Type_commit(&rv);
    int bl[2] = {1, 1};
    MPI_Aint d[2] = {sizeof(int), -(MPI_Aint)sizeof(int)}; /* +1 then -1: lb -1, extent 3 */
    MPI_Type_create_hindexed(2, bl, d, MPI_INT, &neg);
    MPI_Type_commit(&neg);
    ty[0] = (T){v, 3, 5, {0, 2, 4}, "vector"};
    ty[1] = (T){rv, 3, 6, {0, 2, 4}, "resized vector"};
    ty[2] = (T){neg, 2, 3, {1, -1, 0}, "negative hindexed"};
    ty[3] = (T){MPI_INT, 1, 1, {0, 0, 0}, "MPI_INT"};
}

/* Send/receive type pairs (same signature, different layouts). */
static const int pairs[][2] = {{0, 3}, {3, 1}, {2, 0}, {1, 2}, {0, 0}};
#define NPAIRS (int)(sizeof(pairs) / sizeof(pairs[0]))

static int val(int from, int to, int j) { return from * 10000 + to * 100 + j; }

static void fill(const T *t, int *b, int nblocks, int from, int to_of_block) {
    for (int k = 0; k < nblocks; k++)
        for (int j = 0; j < PER; j++)
            *at(t, b, k * PER + j) = val(from, to_of_block < 0 ? k : to_of_block, j);
}

static void rooted(const T *s, const T *r, int nb) {
    int root = size - 1;
    /* Bcast in the send type. */
    int *b = alloc(s, cnt(s));
    if (rank == root)
        fill(s, b, 1, root, 0);
    MPI_Bcast(base(b), cnt(s), s->t, root, MPI_COMM_WORLD);
    for (int j = 0; j < PER; j++)
        CHECK(*at(s, b, j) == val(root, 0, j), "bcast %s [%d] = %d", s->name, j, *at(s, b, j));
    holes(s, b, cnt(s), "bcast");
    free(b);

    /* Gather and Igather: S at every rank, R blocks at the root. */
    for (int nbk = 0; nbk < 2; nbk++) {
        int *sb = alloc(s, cnt(s)), *rb = alloc(r, cnt(r) * size);
        fill(s, sb, 1, rank, 0);
        if (nbk) {
            MPI_Request q;
            MPI_Igather(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, root, MPI_COMM_WORLD,
                        &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else
            MPI_Gather(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, root, MPI_COMM_WORLD);
        if (rank == root) {
            for (int i = 0; i < size; i++)
                for (int j = 0; j < PER; j++)
                    CHECK(*at(r, rb, i * PER + j) == val(i, 0, j), "gather %s->%s from %d [%d]",
                          s->name, r->name, i, j);
            holes(r, rb, cnt(r) * size, "gather");
        }
        free(sb);
        free(rb);
    }

    /* Gatherv/Scatterv with reversed displacements (in extents of R / S). */
    int *counts = xmalloc(size * sizeof(int)), *displs = xmalloc(size * sizeof(int));
    {
        for (int i = 0; i < size; i++) {
            counts[i] = cnt(r);
            displs[i] = (size - 1 - i) * cnt(r);
        }
        int *sb = alloc(s, cnt(s)), *rb = alloc(r, cnt(r) * size);
        fill(s, sb, 1, rank, 0);
        MPI_Gatherv(base(sb), cnt(s), s->t, base(rb), counts, displs, r->t, root,
                    MPI_COMM_WORLD);
        if (rank == root) {
            for (int i = 0; i < size; i++)
                for (int j = 0; j < PER; j++)
                    CHECK(*at(r, rb, (size - 1 - i) * PER + j) == val(i, 0, j),
                          "gatherv %s->%s from %d [%d]", s->name, r->name, i, j);
            holes(r, rb, cnt(r) * size, "gatherv");
        }
        free(sb);
        free(rb);
    }
    for (int v = 0; v < 2; v++) {
        /* Scatter(v): S blocks at the root, R at every rank. */
        for (int i = 0; i < size; i++) {
            counts[i] = cnt(s);
            displs[i] = (size - 1 - i) * cnt(s);
        }
        int *sb = alloc(s, cnt(s) * size), *rb = alloc(r, cnt(r));
        if (rank == root)
            for (int i = 0; i < size; i++)
                for (int j = 0; j < PER; j++)
                    *at(s, sb, (v ? size - 1 - i : i) * PER + j) = val(root, i, j);
        if (v)
            MPI_Scatterv(base(sb), counts, displs, s->t, base(rb), cnt(r), r->t, root,
                         MPI_COMM_WORLD);
        else
            MPI_Scatter(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, root, MPI_COMM_WORLD);
        for (int j = 0; j < PER; j++)
            CHECK(*at(r, rb, j) == val(root, rank, j), "scatter%s %s->%s [%d] = %d",
                  v ? "v" : "", s->name, r->name, j, *at(r, rb, j));
        holes(r, rb, cnt(r), "scatter");
        free(sb);
        free(rb);
    }
    free(counts);
    free(displs);
    (void)nb;
}

static void everyone(const T *s, const T *r) {
    int *counts = xmalloc(size * sizeof(int)), *displs = xmalloc(size * sizeof(int));
    /* Allgather, Iallgather, Allgatherv (reversed), Allgather in place. */
    for (int form = 0; form < 4; form++) {
        int *sb = alloc(s, cnt(s)), *rb = alloc(r, cnt(r) * size);
        fill(s, sb, 1, rank, 0);
        for (int i = 0; i < size; i++) {
            counts[i] = cnt(r);
            displs[i] = (size - 1 - i) * cnt(r);
        }
        int pos = 0; /* 1: reversed */
        if (form == 0)
            MPI_Allgather(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, MPI_COMM_WORLD);
        else if (form == 1) {
            MPI_Request q;
            MPI_Iallgather(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (form == 2) {
            MPI_Allgatherv(base(sb), cnt(s), s->t, base(rb), counts, displs, r->t,
                           MPI_COMM_WORLD);
            pos = 1;
        } else {
            for (int j = 0; j < PER; j++)
                *at(r, rb, rank * PER + j) = val(rank, 0, j);
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base(rb), cnt(r), r->t,
                          MPI_COMM_WORLD);
        }
        for (int i = 0; i < size; i++)
            for (int j = 0; j < PER; j++)
                CHECK(*at(r, rb, (pos ? size - 1 - i : i) * PER + j) == val(i, 0, j),
                      "allgather form %d %s->%s from %d [%d]", form, s->name, r->name, i, j);
        holes(r, rb, cnt(r) * size, "allgather");
        free(sb);
        free(rb);
    }
    /* Alltoall, Ialltoall, Alltoallv (reversed), Alltoallw (bytes), Alltoall in place. */
    for (int form = 0; form < 5; form++) {
        int *sb = alloc(s, cnt(s) * size), *rb = alloc(r, cnt(r) * size);
        int rev = form == 2 || form == 3;
        for (int i = 0; i < size; i++)
            for (int j = 0; j < PER; j++)
                *at(s, sb, (rev ? size - 1 - i : i) * PER + j) = val(rank, i, j);
        int *sc = xmalloc(size * sizeof(int)), *sd = xmalloc(size * sizeof(int));
        MPI_Datatype *st = xmalloc(size * sizeof(MPI_Datatype)),
                     *rt = xmalloc(size * sizeof(MPI_Datatype));
        for (int i = 0; i < size; i++) {
            sc[i] = cnt(s);
            sd[i] = (size - 1 - i) * cnt(s);
            counts[i] = cnt(r);
            displs[i] = (size - 1 - i) * cnt(r);
            st[i] = s->t;
            rt[i] = r->t;
        }
        if (form == 0)
            MPI_Alltoall(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, MPI_COMM_WORLD);
        else if (form == 1) {
            MPI_Request q;
            MPI_Ialltoall(base(sb), cnt(s), s->t, base(rb), cnt(r), r->t, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (form == 2)
            MPI_Alltoallv(base(sb), sc, sd, s->t, base(rb), counts, displs, r->t,
                          MPI_COMM_WORLD);
        else if (form == 3) {
            for (int i = 0; i < size; i++) {
                sd[i] *= s->ext * (int)sizeof(int);
                displs[i] *= r->ext * (int)sizeof(int);
            }
            MPI_Alltoallw(base(sb), sc, sd, st, base(rb), counts, displs, rt, MPI_COMM_WORLD);
        } else {
            for (int i = 0; i < size; i++)
                for (int j = 0; j < PER; j++)
                    *at(r, rb, i * PER + j) = val(rank, i, j);
            MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, base(rb), cnt(r), r->t,
                         MPI_COMM_WORLD);
        }
        for (int i = 0; i < size; i++)
            for (int j = 0; j < PER; j++)
                CHECK(*at(r, rb, (rev ? size - 1 - i : i) * PER + j) == val(i, rank, j),
                      "alltoall form %d %s->%s from %d [%d] = %d", form, s->name, r->name, i,
                      j, *at(r, rb, (rev ? size - 1 - i : i) * PER + j));
        holes(r, rb, cnt(r) * size, "alltoall");
        free(sb);
        free(rb);
        free(sc);
        free(sd);
        free(st);
        free(rt);
    }
    free(counts);
    free(displs);
}

/* Reductions with MPI_SUM over one type t (ints: rank + 1000 * j in block k at offset k). */
static int rv(int from, int j) { return from + 1000 * j; }
static int sum_to(int upto, int j) { /* sum over ranks 0..upto-1 */
    return upto * (upto - 1) / 2 + upto * 1000 * j;
}

static void reductions(const T *t) {
    int root = size > 1 ? 1 : 0;
    int n = cnt(t);
    for (int form = 0; form < 8; form++) {
        int *sb = alloc(t, n * size), *rb = alloc(t, n * size);
        for (int j = 0; j < PER * size; j++)
            *at(t, sb, j) = rv(rank, j);
        int in_place = form == 3 || form == 7;
        if (in_place)
            for (int j = 0; j < PER * size; j++)
                *at(t, rb, j) = rv(rank, j);
        void *s = in_place ? MPI_IN_PLACE : base(sb);
        MPI_Request q;
        const char *name = "";
        int blocks = 1, got_from = 0, upto = size; /* result: block(s) of sum over 0..upto-1 */
        switch (form) {
        case 0:
            name = "reduce";
            MPI_Reduce(s, base(rb), n, t->t, MPI_SUM, root, MPI_COMM_WORLD);
            if (rank != root)
                blocks = 0;
            break;
        case 1:
            name = "allreduce";
            MPI_Allreduce(s, base(rb), n, t->t, MPI_SUM, MPI_COMM_WORLD);
            break;
        case 2:
            name = "iallreduce";
            MPI_Iallreduce(s, base(rb), n, t->t, MPI_SUM, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
            break;
        case 3:
            name = "allreduce in place";
            MPI_Allreduce(s, base(rb), n, t->t, MPI_SUM, MPI_COMM_WORLD);
            break;
        case 4: {
            name = "reduce_scatter_block";
            MPI_Reduce_scatter_block(s, base(rb), n, t->t, MPI_SUM, MPI_COMM_WORLD);
            got_from = rank;
            break;
        }
        case 5: {
            name = "reduce_scatter";
            int *rc = xmalloc(size * sizeof(int));
            for (int i = 0; i < size; i++)
                rc[i] = n;
            MPI_Reduce_scatter(s, base(rb), rc, t->t, MPI_SUM, MPI_COMM_WORLD);
            free(rc);
            got_from = rank;
            break;
        }
        case 6:
            name = "scan";
            MPI_Scan(s, base(rb), n, t->t, MPI_SUM, MPI_COMM_WORLD);
            upto = rank + 1;
            break;
        case 7:
            name = "exscan in place";
            MPI_Exscan(s, base(rb), n, t->t, MPI_SUM, MPI_COMM_WORLD);
            upto = rank;
            if (rank == 0)
                blocks = 0;
            break;
        }
        for (int k = 0; k < blocks; k++)
            for (int j = 0; j < PER; j++) {
                int want = sum_to(upto, got_from * PER + j);
                CHECK(*at(t, rb, j) == want, "%s %s [%d] = %d, want %d", name, t->name, j,
                      *at(t, rb, j), want);
            }
        holes(t, rb, n * size, name);
        free(sb);
        free(rb);
    }
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    make_types();
    for (int p = 0; p < NPAIRS; p++) {
        rooted(&ty[pairs[p][0]], &ty[pairs[p][1]], 1);
        everyone(&ty[pairs[p][0]], &ty[pairs[p][1]]);
    }
    for (int t = 0; t < 4; t++)
        reductions(&ty[t]);
    for (int t = 0; t < 3; t++)
        MPI_Type_free(&ty[t].t);
    return finish();
}
