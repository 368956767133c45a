/* One-sided communication as the direct path (osc_direct=auto) and the message path (off)
 * must both do it, for Win_create, Win_allocate and Win_allocate_shared windows: derived
 * datatypes, large transfers, concurrent accumulates from every rank on one element
 * (atomicity, on the atomic and on the locked route, mixed ops), exclusive locks as a mutex,
 * PSCW, and gets from a target busy computing outside MPI. Every value is checked.
 * Prints " No Errors" at rank 0 when all ranks agree. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int errs = 0, rank, size;
#define CHECK(cond, ...)                                                \
    do {                                                                \
        if (!(cond)) {                                                  \
            errs++;                                                     \
            printf("rank %d line %d (%s): ", rank, __LINE__, flavor);   \
            printf(__VA_ARGS__);                                        \
            printf("\n");                                               \
            fflush(stdout);                                             \
        }                                                               \
    } while (0)

#define K 200
#define BIG (1 << 20)
/* Window layout (bytes): [0, 64) counters, [64, 64 + BIG) bulk data. */
#define WBYTES (64 + BIG)
static const char *flavor;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static unsigned char pat(int owner, long i) { return (unsigned char)(owner * 31 + i * 7 + 1); }

static void run(MPI_Win win, unsigned char *mem) {
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* 1. Fence: strided puts (a vector type at both ends) into the right neighbour. */
    memset(mem, 0, WBYTES);
    MPI_Win_fence(0, win);
    {
        MPI_Datatype vec;
        MPI_Type_vector(100, 2, 5, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int src[500];
        for (int i = 0; i < 500; i++) src[i] = rank * 1000 + i;
        MPI_Put(src, 1, vec, right, 8, 1, vec, win);
        MPI_Win_fence(0, win);
        int *got = (int *)(mem + 64);
        int bad = 0;
        for (int i = 0; i < 500; i++) {
            int want = (i % 5) < 2 ? left * 1000 + i : 0;
            if (got[i] != want) bad++;
        }
        CHECK(bad == 0, "strided put: %d wrong", bad);
        /* Get it back through the type, into a contiguous buffer. */
        int back[200];
        MPI_Get(back, 200, MPI_INT, right, 8, 1, vec, win);
        MPI_Win_fence(0, win);
        bad = 0;
        for (int i = 0; i < 200; i++) {
            int j = (i / 2) * 5 + i % 2;
            if (back[i] != rank * 1000 + j) bad++;
        }
        CHECK(bad == 0, "strided get: %d wrong", bad);
        MPI_Type_free(&vec);
    }

    /* 2. Passive target, 8 B .. 1 MiB: put a pattern into the left neighbour, get the right's. */
    MPI_Win_fence(0, win);
    {
        unsigned char *buf = malloc(BIG), *in = malloc(BIG);
        for (long i = 0; i < BIG; i++) buf[i] = pat(rank, i);
        int lens[3] = {8, 4096, BIG};
        for (int l = 0; l < 3; l++) {
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, left, 0, win);
            MPI_Put(buf, lens[l], MPI_BYTE, left, 8, lens[l], MPI_BYTE, win);
            MPI_Win_unlock(left, win);
            MPI_Barrier(MPI_COMM_WORLD);
            memset(in, 0, BIG);
            MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
            MPI_Request r;
            MPI_Rget(in, lens[l], MPI_BYTE, right, 8, lens[l], MPI_BYTE, win, &r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Win_unlock(right, win);
            long bad = 0;
            for (long i = 0; i < lens[l]; i++)
                if (in[i] != pat((right + 1) % size, i)) bad++; /* its right's */
            CHECK(bad == 0, "passive %d B: %ld wrong", lens[l], bad);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        free(buf);
        free(in);
    }

    /* 3. Atomicity: every rank hammers rank 0's counters at once, mixing the calls.
     * int at 0, long at 8, double at 16, short at 24: the atomic route on mapped memory;
     * an int at byte 33 (misaligned) and a MPI_DOUBLE_INT at 40: the locked route; a long at 56
 * counted by compare-and-swap. Displacement units are 8 bytes. */
    MPI_Win_fence(0, win);
    if (rank == 0) memset(mem, 0, 64 + 400);
    MPI_Win_fence(0, win);
    MPI_Win_lock_all(0, win);
    /* Large accumulates (applied in bulk) meeting single-element ones on the same ints. */
    {
        int ones[100], oldi;
        for (int i = 0; i < 100; i++) ones[i] = 1;
        for (int k = 0; k < 40; k++) {
            if (k % 2 == 0)
                MPI_Accumulate(ones, 100, MPI_INT, 0, 8, 100, MPI_INT, MPI_SUM, win);
            else
                MPI_Fetch_and_op(&ones[0], &oldi, MPI_INT, 0, 8, MPI_SUM, win);
            MPI_Win_flush(0, win);
        }
    }
    {
        MPI_Datatype at33;
        int one = 1, oldi;
        long onel = 1, oldl;
        double oned = 0.5;
        short ones = 1;
        struct { double v; int i; } di = {(double)rank, rank};
        for (int k = 0; k < K; k++) {
            switch (k % 3) {
            case 0: MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win); break;
            case 1: MPI_Fetch_and_op(&one, &oldi, MPI_INT, 0, 0, MPI_SUM, win); break;
            case 2: MPI_Get_accumulate(&one, 1, MPI_INT, &oldi, 1, MPI_INT, 0, 0, 1, MPI_INT,
                                       MPI_SUM, win); break;
            }
            MPI_Fetch_and_op(&onel, &oldl, MPI_LONG, 0, 1, MPI_SUM, win);
            MPI_Accumulate(&oned, 1, MPI_DOUBLE, 0, 2, 1, MPI_DOUBLE, MPI_SUM, win);
            MPI_Accumulate(&ones, 1, MPI_SHORT, 0, 3, 1, MPI_SHORT, MPI_SUM, win);
            /* byte displacement 33 through an hindexed type (disp units are 1 for this) */
            int bl = 1;
            MPI_Aint d33 = 33;
            MPI_Type_create_hindexed(1, &bl, &d33, MPI_INT, &at33);
            MPI_Type_commit(&at33);
            MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, at33, MPI_SUM, win);
            MPI_Type_free(&at33);
            MPI_Accumulate(&di, 1, MPI_DOUBLE_INT, 0, 5, 1, MPI_DOUBLE_INT, MPI_MAXLOC, win);
            MPI_Win_flush(0, win);
        }
        /* A CAS-built counter: a read, then compare-and-swap until it takes. */
        for (int k = 0; k < K; k++) {
            long cur, res, next;
            MPI_Fetch_and_op(NULL, &cur, MPI_LONG, 0, 7, MPI_NO_OP, win);
            MPI_Win_flush(0, win);
            for (;;) {
                next = cur + 1;
                MPI_Compare_and_swap(&next, &cur, &res, MPI_LONG, 0, 7, win);
                MPI_Win_flush(0, win);
                if (res == cur) break;
                cur = res;
            }
        }
    }
    MPI_Win_unlock_all(win);
    MPI_Win_fence(0, win);
    if (rank == 0) {
        int i0, i33, ix; long l8, l48; double d16, v; short s24;
        memcpy(&i0, mem, 4); memcpy(&l8, mem + 8, 8); memcpy(&d16, mem + 16, 8);
        memcpy(&s24, mem + 24, 2); memcpy(&i33, mem + 33, 4); memcpy(&l48, mem + 56, 8);
        memcpy(&v, mem + 40, 8); memcpy(&ix, mem + 48, 4);
        CHECK(i0 == size * K, "int sum %d, want %d", i0, size * K);
        CHECK(l8 == (long)size * K, "long sum %ld", l8);
        CHECK(d16 == 0.5 * size * K, "double sum %g", d16);
        CHECK(s24 == size * K, "short sum %d", s24);
        CHECK(i33 == size * K, "misaligned int sum %d", i33);
        CHECK(l48 == (long)size * K, "CAS counter %ld", l48);
        CHECK(v == size - 1 && ix == size - 1, "maxloc (%g, %d)", v, ix);
        int *bulk = (int *)(mem + 64), bad = 0;
        for (int i = 0; i < 100; i++)
            if (bulk[i] != (i == 0 ? size * 40 : size * 20)) bad++;
        CHECK(bad == 0, "bulk and single accumulates: %d wrong (first %d, second %d)", bad,
              bulk[0], bulk[1]);
    }

    /* 4. Exclusive locks as a mutex: get, add one, put, under MPI_LOCK_EXCLUSIVE. */
    MPI_Win_fence(0, win);
    if (rank == 0) memset(mem, 0, 8);
    MPI_Win_fence(0, win);
    for (int k = 0; k < K / 4; k++) {
        int v;
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
        MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_flush(0, win);
        v++;
        MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
        MPI_Win_unlock(0, win);
    }
    MPI_Win_fence(0, win);
    if (rank == 0) {
        int v;
        memcpy(&v, mem, 4);
        CHECK(v == size * (K / 4), "mutex counter %d, want %d", v, size * (K / 4));
    }

    /* 5. PSCW ring: each rank puts its rank into its right neighbour. */
    {
        MPI_Group world, gl, gr;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &left, &gl);
        MPI_Group_incl(world, 1, &right, &gr);
        if (size > 1) {
            MPI_Win_post(gl, 0, win);
            MPI_Win_start(gr, 0, win);
        }
        int v = rank + 100;
        MPI_Put(&v, 1, MPI_INT, right, 1, 1, MPI_INT, win);
        if (size > 1) {
            MPI_Win_complete(win);
            MPI_Win_wait(win);
        } else {
            MPI_Win_fence(0, win);
        }
        int got;
        memcpy(&got, mem + 8, 4);
        CHECK(got == left + 100, "pscw %d, want %d", got, left + 100);
        MPI_Group_free(&world); MPI_Group_free(&gl); MPI_Group_free(&gr);
    }

    /* 6. A target computing outside MPI: the last rank spins 0.3 s without calls while the
     * others read its bulk data under a shared lock (direct: served meanwhile). */
    MPI_Win_fence(0, win);
    int busy = size - 1;
    if (rank == busy) {
        for (long i = 0; i < 4096; i++) mem[64 + i] = pat(busy + 7, i);
    }
    MPI_Win_fence(0, win);
    if (rank == busy) {
        double t0 = now();
        volatile double x = 0;
        while (now() - t0 < 0.3) x += 1;
    } else {
        unsigned char in[4096];
        double t0 = now();
        MPI_Win_lock(MPI_LOCK_SHARED, busy, 0, win);
        MPI_Get(in, 4096, MPI_BYTE, busy, 8, 4096, MPI_BYTE, win);
        MPI_Win_unlock(busy, win);
        double dt = now() - t0;
        long bad = 0;
        for (long i = 0; i < 4096; i++)
            if (in[i] != pat(busy + 7, i)) bad++;
        CHECK(bad == 0, "get from a busy target: %ld wrong", bad);
        if (rank == 0) {
            printf("%s: get from a busy target took %.3f s\n", flavor, dt);
            fflush(stdout);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Win win;
    unsigned char *mem;

    flavor = "create";
    mem = malloc(WBYTES);
    MPI_Win_create(mem, WBYTES, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    run(win, mem);
    MPI_Win_free(&win);
    free(mem);

    flavor = "allocate";
    MPI_Win_allocate(WBYTES, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    run(win, mem);
    MPI_Win_free(&win);

    flavor = "allocate_shared";
    MPI_Win_allocate_shared(WBYTES, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    run(win, mem);
    MPI_Win_free(&win);

    int all;
    MPI_Reduce(&errs, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
