/* MPI_Comm_split with several colors and reversed keys, MPI_UNDEFINED, split_type SHARED,
 * a bad color at every rank, and traffic on overlapping communicators in flight at once. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int errs = 0;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int rank, size, r, s, rc;
    MPI_Comm split, odd, shared, dup;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Colors rank % 3, keys reversed: the highest world rank is rank 0 in its color. */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 3, -rank, &split);
    MPI_Comm_rank(split, &r);
    MPI_Comm_size(split, &s);
    {
        int expect_size = 0, expect_rank = 0;
        for (int i = 0; i < size; i++)
            if (i % 3 == rank % 3) {
                expect_size++;
                if (i > rank) expect_rank++;
            }
        CHECK(s == expect_size && r == expect_rank, "split: rank %d size %d, want %d %d", r, s, expect_rank, expect_size);
    }
    /* Ranks translate back to world ranks. */
    {
        MPI_Group gw, gs;
        int *in = malloc(sizeof(int) * s), *out = malloc(sizeof(int) * s);
        MPI_Comm_group(MPI_COMM_WORLD, &gw);
        MPI_Comm_group(split, &gs);
        for (int i = 0; i < s; i++) in[i] = i;
        MPI_Group_translate_ranks(gs, s, in, gw, out);
        for (int i = 0; i < s; i++) {
            int w = out[i];
            CHECK(w % 3 == rank % 3, "member %d is world %d, wrong color", i, w);
            if (i > 0) CHECK(out[i] < out[i - 1], "keys not reversed: %d then %d", out[i - 1], out[i]);
        }
        MPI_Group_free(&gw);
        MPI_Group_free(&gs);
        free(in);
        free(out);
    }
    /* A ring on the split communicator: sum of world ranks of its members. */
    {
        int mine = rank, sum = rank, pass = rank;
        for (int i = 1; i < s; i++) {
            int got;
            MPI_Sendrecv(&pass, 1, MPI_INT, (r + 1) % s, 3, &got, 1, MPI_INT, (r + s - 1) % s, 3, split, MPI_STATUS_IGNORE);
            sum += got;
            pass = got;
        }
        int want = 0;
        for (int i = 0; i < size; i++) if (i % 3 == rank % 3) want += i;
        CHECK(sum == want, "ring sum %d want %d (mine %d)", sum, want, mine);
    }

    /* MPI_UNDEFINED: even ranks get MPI_COMM_NULL. */
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2 ? 1 : MPI_UNDEFINED, 0, &odd);
    if (rank % 2) {
        CHECK(odd != MPI_COMM_NULL, "odd rank got MPI_COMM_NULL");
        MPI_Comm_size(odd, &s);
        CHECK(s == size / 2, "odd size %d", s);
        MPI_Comm_free(&odd);
    } else {
        CHECK(odd == MPI_COMM_NULL, "even rank got a communicator");
    }

    /* Shared memory: every rank is on this node. */
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared);
    MPI_Comm_size(shared, &s);
    MPI_Comm_rank(shared, &r);
    CHECK(s == size && r == rank, "shared: rank %d size %d", r, s);
    /* An unknown split type gives MPI_COMM_NULL. */
    {
        MPI_Comm none;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_UNDEFINED, 0, MPI_INFO_NULL, &none);
        CHECK(none == MPI_COMM_NULL, "split_type MPI_UNDEFINED gave a communicator");
    }

    /* A negative color at one rank fails the call everywhere (no rank is left waiting). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        MPI_Comm bad = MPI_COMM_NULL;
        rc = MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? -5 : 0, 0, &bad);
        CHECK(rc == MPI_ERR_ARG, "bad color: rc %d", rc);
    }

    /* Overlapping communicators in flight at once: receives posted on all four with the same
     * tag and wildcards, sends issued in the opposite order. */
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    {
        MPI_Comm comms[4] = {MPI_COMM_WORLD, dup, split, shared};
        int got[4], val[4];
        MPI_Request rq[8];
        for (int c = 0; c < 4; c++)
            MPI_Irecv(&got[c], 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, comms[c], &rq[c]);
        for (int c = 3; c >= 0; c--) {
            int cr, cs;
            MPI_Comm_rank(comms[c], &cr);
            MPI_Comm_size(comms[c], &cs);
            val[c] = 100 * c + rank;
            MPI_Isend(&val[c], 1, MPI_INT, (cr + 1) % cs, 0, comms[c], &rq[4 + c]);
        }
        MPI_Waitall(8, rq, MPI_STATUSES_IGNORE);
        for (int c = 0; c < 4; c++)
            CHECK(got[c] / 100 == c, "communicator %d received %d", c, got[c]);
    }
    MPI_Comm_free(&dup);
    MPI_Comm_free(&shared);
    MPI_Comm_free(&split);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    MPI_Finalize();
    return errs != 0;
}
