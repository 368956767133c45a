/* Atomics on 8-byte elements from every rank at once (over ib they are verbs atomics when
 * osc_direct=auto, messages the target applies when off): Fetch_and_op(SUM) and CAS
 * increments on one element of rank 0, a CAS spinlock protecting a counter updated by
 * Get + Put, Accumulate(SUM) / Get_accumulate(MAX, NO_OP, REPLACE) mixed on one element, a
 * misaligned int64 element (the message route) next to them, for Win_allocate and
 * Win_create. Every final value is checked exactly. Rank 1 prints a rough Fetch_and_op
 * latency. Prints " No Errors" at rank 0 when all ranks agree. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0, rank, size;
static const char *flavor;
#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            errs++;                                                   \
            printf("rank %d line %d (%s): ", rank, __LINE__, flavor); \
            printf(__VA_ARGS__);                                      \
            printf("\n");                                             \
            fflush(stdout);                                           \
        }                                                             \
    } while (0)

#define N 300
/* Elements (int64) of rank 0's window (the window's disp_unit is 1: byte offsets 8 * e): */
enum { FOP, CAS, LOCK, COUNTER, ACC, MAXE, SELF, NELEM };
/* A misaligned int64 right after them (byte offset), the message route over ib. */
#define MIS_OFF (NELEM * 8 + 4)
#define WBYTES (NELEM * 8 + 16)

static int64_t get_one(MPI_Win win, int target, MPI_Aint disp) {
    int64_t v, dummy = 0;
    MPI_Fetch_and_op(&dummy, &v, MPI_INT64_T, target, disp, MPI_NO_OP, win);
    MPI_Win_flush(target, win);
    return v;
}

static void run(MPI_Win win, char *mem) {
    int64_t one = 1, old, got;
    memset(mem, 0, WBYTES);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);

    /* Fetch_and_op(SUM): the values fetched are all distinct. */
    for (int i = 0; i < N; i++) {
        MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 8 * FOP, MPI_SUM, win);
        MPI_Win_flush(0, win);
        CHECK(old >= 0 && old < (int64_t)N * size, "fop fetched %lld", (long long)old);
    }

    /* Compare_and_swap increments, retried until they land. */
    for (int i = 0; i < N; i++) {
        int64_t guess = 0;
        for (;;) {
            int64_t next = guess + 1;
            MPI_Compare_and_swap(&next, &guess, &old, MPI_INT64_T, 0, 8 * CAS, win);
            MPI_Win_flush(0, win);
            if (old == guess)
                break;
            guess = old;
        }
    }

    /* A spinlock by CAS protecting a counter read and written with Get and Put. */
    for (int i = 0; i < N / 10; i++) {
        int64_t zero = 0, me = rank + 1;
        do {
            MPI_Compare_and_swap(&me, &zero, &old, MPI_INT64_T, 0, 8 * LOCK, win);
            MPI_Win_flush(0, win);
        } while (old != 0);
        int64_t c;
        MPI_Get(&c, 1, MPI_INT64_T, 0, 8 * COUNTER, 1, MPI_INT64_T, win);
        MPI_Win_flush(0, win);
        c += 1;
        MPI_Put(&c, 1, MPI_INT64_T, 0, 8 * COUNTER, 1, MPI_INT64_T, win);
        MPI_Win_flush(0, win);
        MPI_Fetch_and_op(&zero, &old, MPI_INT64_T, 0, 8 * LOCK, MPI_REPLACE, win);
        MPI_Win_flush(0, win);
        CHECK(old == me, "lock held by %lld, not me", (long long)old);
    }

    /* Accumulate(SUM) of MPI_LONG and Get_accumulate(SUM) on one element, MAX on another
     * (a CAS loop), the misaligned element by messages, and each rank's own window. */
    long two = 2;
    int64_t v = rank * 1000 + 7;
    for (int i = 0; i < N / 3; i++) {
        MPI_Accumulate(&two, 1, MPI_LONG, 0, 8 * ACC, 1, MPI_LONG, MPI_SUM, win);
        MPI_Get_accumulate(&one, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, 0, 8 * ACC, 1, MPI_INT64_T,
                           MPI_SUM, win);
        int64_t m = v + i;
        MPI_Get_accumulate(&m, 1, MPI_INT64_T, &old, 1, MPI_INT64_T, 0, 8 * MAXE, 1, MPI_INT64_T,
                           MPI_MAX, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, MIS_OFF, 1, MPI_INT64_T, MPI_SUM, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, rank, 8 * SELF, 1, MPI_INT64_T, MPI_SUM, win);
        MPI_Accumulate(&one, 1, MPI_INT64_T, (rank + 1) % size, 8 * SELF, 1, MPI_INT64_T, MPI_SUM,
                       win);
    }
    MPI_Win_flush_all(win);
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    int64_t want = (int64_t)N * size;
    CHECK((got = get_one(win, 0, 8 * FOP)) == want, "fop: %lld, want %lld", (long long)got,
          (long long)want);
    CHECK((got = get_one(win, 0, 8 * CAS)) == want, "cas: %lld, want %lld", (long long)got,
          (long long)want);
    CHECK((got = get_one(win, 0, 8 * LOCK)) == 0, "lock word %lld", (long long)got);
    MPI_Get(&got, 1, MPI_INT64_T, 0, 8 * COUNTER, 1, MPI_INT64_T, win);
    MPI_Win_flush(0, win);
    CHECK(got == (int64_t)(N / 10) * size, "counter %lld, want %d", (long long)got,
          (N / 10) * size);
    CHECK((got = get_one(win, 0, 8 * ACC)) == (int64_t)3 * (N / 3) * size, "acc %lld",
          (long long)got);
    CHECK((got = get_one(win, 0, 8 * MAXE)) == (int64_t)(size - 1) * 1000 + 7 + N / 3 - 1,
          "max %lld", (long long)got);
    CHECK((got = get_one(win, 0, MIS_OFF)) == (int64_t)(N / 3) * size, "misaligned %lld",
          (long long)got);
    CHECK((got = get_one(win, rank, 8 * SELF)) == (int64_t)2 * (N / 3), "self %lld",
          (long long)got);
    MPI_Win_unlock_all(win);

    /* Rough latency of one Fetch_and_op + flush, rank 1 on rank 0 (no assertion). */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        double t = MPI_Wtime();
        for (int i = 0; i < 1000; i++) {
            MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 8 * FOP, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
        t = MPI_Wtime() - t;
        MPI_Win_unlock(0, win);
        printf("%s: 8-byte Fetch_and_op + flush: %.2f us\n", flavor, t * 1e6 / 1000);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    char *mem;

    flavor = "allocate";
    MPI_Win_allocate(WBYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    run(win, mem);
    MPI_Win_free(&win);

    flavor = "create";
    mem = aligned_alloc(64, 128);
    MPI_Win_create(mem, WBYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    run(win, mem);
    MPI_Win_free(&win);
    free(mem);

    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
