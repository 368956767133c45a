/* Ranks at different thread levels in one job: even ranks MPI_THREAD_MULTIPLE, odd ranks
 * MPI_THREAD_FUNNELED (as in MPMD jobs, or a MULTIPLE parent and the children it spawned).
 * Communicator creation and MPI_Barrier have MULTIPLE forms with other messages; the members of
 * each communicator agree which forms to use, so these calls must match across the levels. Then
 * the MULTIPLE ranks alone get a communicator of their own, where the MULTIPLE forms apply, and
 * two threads each create and use a communicator from it at once. Prints " No Errors" on rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int errs;
#define CHECK(c, ...) do { if (!(c)) { errs++; printf(__VA_ARGS__); printf("\n"); } } while (0)

static int sum(MPI_Comm c, int v)
{
    int s = 0;
    MPI_Allreduce(&v, &s, 1, MPI_INT, MPI_SUM, c);
    return s;
}

static MPI_Comm multi, own[2];

/* Each thread on a communicator of its own (collectives on one communicator from two threads
 * at once would be erroneous). */
static void *dup_and_barrier(void *arg)
{
    MPI_Comm d;
    MPI_Comm_dup(*(MPI_Comm *)arg, &d);
    MPI_Barrier(d);
    MPI_Comm_free(&d);
    return NULL;
}

int main(int argc, char **argv)
{
    const char *pr = getenv("PMI_RANK");
    int want = pr && atoi(pr) % 2 ? MPI_THREAD_FUNNELED : MPI_THREAD_MULTIPLE;
    int provided, rank, size;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == want, "rank %d: asked %d, provided %d", rank, want, provided);

    for (int round = 0; round < 3; round++) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Comm dup, split, shm, even;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Barrier(dup);
        CHECK(sum(dup, 1) == size, "dup");
        MPI_Comm_split(dup, rank % 2, -rank, &split);
        int ss;
        MPI_Comm_size(split, &ss);
        CHECK(ss == (size + (rank % 2 ? 0 : 1)) / 2, "split size %d", ss);
        CHECK(sum(split, rank) >= 0, "split sum");
        MPI_Barrier(split);
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shm);
        MPI_Barrier(shm);
        MPI_Group g, ge;
        MPI_Comm_group(MPI_COMM_WORLD, &g);
        int range[1][3] = {{0, size - 1, 2}};
        MPI_Group_range_incl(g, 1, range, &ge);
        MPI_Comm_create(dup, ge, &even);
        CHECK((even != MPI_COMM_NULL) == (rank % 2 == 0), "create");
        if (even != MPI_COMM_NULL) {
            MPI_Barrier(even);
            MPI_Comm_free(&even);
        }
        MPI_Group_free(&ge);
        MPI_Group_free(&g);
        MPI_Comm_free(&shm);
        MPI_Comm_free(&split);
        MPI_Comm_free(&dup);
    }

    /* The MULTIPLE ranks among themselves: two threads create communicators at once. */
    MPI_Comm_split(MPI_COMM_WORLD, want == MPI_THREAD_MULTIPLE ? 0 : MPI_UNDEFINED, rank, &multi);
    if (multi != MPI_COMM_NULL) {
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            MPI_Comm_dup(multi, &own[i]);
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, dup_and_barrier, &own[i]);
        for (int i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
            MPI_Comm_free(&own[i]);
        }
        MPI_Comm_free(&multi);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    int all = 0;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
