/* MPI_Comm_create from groups (even ranks, reversed order, disjoint groups: evens and odds
 * each passing their own, MPI 2.2), and hundreds of communicators created and freed, several
 * alive at once, each carrying traffic. With the argument "multiple": under
 * MPI_THREAD_MULTIPLE (where creation takes another path). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int rank, size, r, s;
    MPI_Group world, evens, rev;
    MPI_Comm ce, cr;
    if (argc > 1 && argv[1][0] == 'm') {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_group(MPI_COMM_WORLD, &world);

    /* Even ranks, by a range. */
    {
        int range[1][3] = {{0, size - 1, 2}};
        MPI_Group_range_incl(world, 1, range, &evens);
    }
    MPI_Comm_create(MPI_COMM_WORLD, evens, &ce);
    if (rank % 2 == 0) {
        CHECK(ce != MPI_COMM_NULL, "even rank got MPI_COMM_NULL");
        MPI_Comm_rank(ce, &r);
        MPI_Comm_size(ce, &s);
        CHECK(r == rank / 2 && s == (size + 1) / 2, "evens: rank %d size %d", r, s);
        MPI_Barrier(ce);
        MPI_Comm_free(&ce);
    } else {
        CHECK(ce == MPI_COMM_NULL, "odd rank got a communicator");
    }

    /* Disjoint groups: each rank passes the group of its own parity, in reverse order. */
    {
        int n = 0, *ranks = malloc(sizeof(int) * size);
        for (int i = size - 1; i >= 0; i--)
            if (i % 2 == rank % 2) ranks[n++] = i;
        MPI_Group mine;
        MPI_Comm cp;
        MPI_Group_incl(world, n, ranks, &mine);
        MPI_Comm_create(MPI_COMM_WORLD, mine, &cp);
        CHECK(cp != MPI_COMM_NULL, "parity group: MPI_COMM_NULL");
        MPI_Comm_rank(cp, &r);
        MPI_Comm_size(cp, &s);
        CHECK(s == n, "parity group: size %d, want %d", s, n);
        int want = 0;
        while (ranks[want] != rank) want++;
        CHECK(r == want, "parity group: rank %d, want %d", r, want);
        int sum = 0;
        MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, cp);
        int expect = 0;
        for (int i = 0; i < n; i++) expect += ranks[i];
        CHECK(sum == expect, "parity group: sum of world ranks %d, want %d", sum, expect);
        MPI_Comm_free(&cp);
        MPI_Group_free(&mine);
        free(ranks);
    }

    /* All ranks, reversed. */
    {
        int *ranks = malloc(sizeof(int) * size);
        for (int i = 0; i < size; i++) ranks[i] = size - 1 - i;
        MPI_Group_incl(world, size, ranks, &rev);
        free(ranks);
    }
    MPI_Comm_create(MPI_COMM_WORLD, rev, &cr);
    MPI_Comm_rank(cr, &r);
    CHECK(r == size - 1 - rank, "reversed: rank %d", r);
    {
        int result;
        MPI_Comm_compare(MPI_COMM_WORLD, cr, &result);
        CHECK(result == (size == 1 ? MPI_CONGRUENT : MPI_SIMILAR), "WORLD vs reversed: %d", result);
    }
    /* Empty group: everyone gets MPI_COMM_NULL. */
    {
        MPI_Comm none;
        MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &none);
        CHECK(none == MPI_COMM_NULL, "empty group gave a communicator");
    }

    /* MPI_Comm_create_group: only members call; two overlapping groups, told apart by tag. */
    {
        int h = (size + 1) / 2, lo = h / 2;
        int first[1][3] = {{0, h - 1, 1}}, last[1][3] = {{size - 1, lo, -1}};
        MPI_Group gf, gl;
        MPI_Comm cf = MPI_COMM_NULL, cl = MPI_COMM_NULL;
        MPI_Group_range_incl(world, 1, first, &gf);
        MPI_Group_range_incl(world, 1, last, &gl);
        if (rank < h) MPI_Comm_create_group(MPI_COMM_WORLD, gf, 1, &cf);
        if (rank >= lo) MPI_Comm_create_group(MPI_COMM_WORLD, gl, 2, &cl);
        if (rank < h) {
            int sum = 0;
            MPI_Comm_rank(cf, &r);
            MPI_Comm_size(cf, &s);
            CHECK(r == rank && s == h, "create_group first: rank %d size %d", r, s);
            for (int i = 0; i < s; i++) {
                int x = rank, y;
                MPI_Sendrecv(&x, 1, MPI_INT, (r + i) % s, 9, &y, 1, MPI_INT, (r + s - i) % s, 9, cf, MPI_STATUS_IGNORE);
                sum += y;
            }
            CHECK(sum == h * (h - 1) / 2, "sum over first %d", sum);
            MPI_Comm_free(&cf);
        }
        if (rank >= lo) {
            MPI_Comm_rank(cl, &r);
            MPI_Comm_size(cl, &s);
            CHECK(r == size - 1 - rank && s == size - lo, "create_group last: rank %d size %d", r, s);
            MPI_Barrier(cl);
            MPI_Comm_free(&cl);
        }
        MPI_Group_free(&gf);
        MPI_Group_free(&gl);
    }

    /* Hundreds of communicators: create, use, free, with a few kept alive across iterations. */
    {
        MPI_Comm keep[4] = {MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
        for (int i = 0; i < 300; i++) {
            MPI_Comm c;
            int k = i % 4, x = i, y = -1;
            switch (i % 3) {
            case 0: MPI_Comm_dup(MPI_COMM_WORLD, &c); break;
            case 1: MPI_Comm_split(cr, 0, rank, &c); break;
            default: MPI_Comm_create(MPI_COMM_WORLD, world, &c); break;
            }
            MPI_Comm_size(c, &s);
            MPI_Comm_rank(c, &r);
            MPI_Sendrecv(&x, 1, MPI_INT, (r + 1) % s, 0, &y, 1, MPI_INT, (r + s - 1) % s, 0, c, MPI_STATUS_IGNORE);
            CHECK(y == i, "iteration %d: got %d", i, y);
            if (keep[k] != MPI_COMM_NULL) {
                /* The old one still works while the new one exists. */
                MPI_Sendrecv(&x, 1, MPI_INT, (r + 1) % s, 1, &y, 1, MPI_INT, (r + s - 1) % s, 1, keep[k], MPI_STATUS_IGNORE);
                MPI_Comm_free(&keep[k]);
            }
            keep[k] = c;
        }
        for (int k = 0; k < 4; k++) MPI_Comm_free(&keep[k]);
    }

    MPI_Comm_free(&cr);
    MPI_Group_free(&rev);
    MPI_Group_free(&evens);
    MPI_Group_free(&world);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    MPI_Finalize();
    return errs != 0;
}
