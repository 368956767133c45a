/*
 * pingpong.c -- correctness ping-pong between ranks 0 and 1.
 *
 * For each message size, rank 0 sends a message to rank 1 and rank 1 sends
 * one back, for a number of iterations.  Every message's bytes follow a
 * pattern that depends on the size, the iteration and the direction, so a
 * stale, shifted, truncated or mixed-up message is caught: the receiver
 * checks every byte, that nothing was written past the end of the message,
 * and the status (MPI_SOURCE, MPI_TAG, MPI_Get_count).  Iterations rotate
 * through three ways of communicating:
 *   0: MPI_Send / MPI_Recv with MPI_ANY_SOURCE and MPI_ANY_TAG,
 *   1: MPI_Irecv posted before the peer sends, MPI_Wait,
 *   2: MPI_Isend + MPI_Irecv, MPI_Test polling, MPI_Waitall,
 * and each size ends with an MPI_Sendrecv exchange in both directions.
 * Any mismatch prints what differed and calls MPI_Abort.  At the end rank 0
 * prints "pingpong: OK".  Ranks other than 0 and 1 only wait at the barrier.
 *
 * Usage: pingpong [size ...]
 *   sizes in bytes, with an optional K, M or G suffix (powers of 1024);
 *   default: 0 1 4095 4096 4097 1M 16M
 *
 * Build:  mpicc -O2 -o pingpong pingpong.c      Run:  mpirun -np 2 ./pingpong
 */
#include <mpi.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        int check_rc_ = (call);                                              \
        if (check_rc_ != MPI_SUCCESS) {                                      \
            fprintf(stderr, "pingpong: %s failed with error %d (%s:%d)\n",   \
                    #call, check_rc_, __FILE__, __LINE__);                   \
            MPI_Abort(MPI_COMM_WORLD, 1);                                    \
        }                                                                    \
    } while (0)

/* Bytes after the end of each receive buffer that must stay untouched. */
#define GUARD 64
#define GUARD_BYTE 0x5a

static int rank;

/* The expected byte at offset i of a message.  Not periodic in 256 bytes
   (the higher bits of i are folded in), and different for each size,
   iteration and direction. */
static unsigned char seed_of(size_t size, int iter, int dir)
{
    unsigned long x = (unsigned long)size * 2654435761UL + (unsigned long)iter * 40503UL
                      + (unsigned long)dir * 0x9e37UL + 0x2bUL;
    return (unsigned char)(x ^ (x >> 8) ^ (x >> 16) ^ (x >> 24));
}

static unsigned char pattern_byte(size_t i, unsigned char seed)
{
    size_t h = i ^ (i >> 8) ^ (i >> 16) ^ (i >> 24);
    return (unsigned char)(h * 31u + seed);
}

static void fill(unsigned char *buf, size_t size, int iter, int dir)
{
    unsigned char seed = seed_of(size, iter, dir);
    size_t i;
    for (i = 0; i < size; i++)
        buf[i] = pattern_byte(i, seed);
}

/* Fill a receive buffer with the complement of what must arrive, so that any
   byte the receive fails to write is caught, and set the guard bytes. */
static void poison(unsigned char *buf, size_t size, int iter, int dir)
{
    unsigned char seed = seed_of(size, iter, dir);
    size_t i;
    for (i = 0; i < size; i++)
        buf[i] = (unsigned char)~pattern_byte(i, seed);
    memset(buf + size, GUARD_BYTE, GUARD);
}

static void fail(void)
{
    fflush(stdout);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void verify(const unsigned char *buf, size_t size, int iter, int dir,
                   const MPI_Status *st, int source, int tag, const char *how)
{
    unsigned char seed = seed_of(size, iter, dir);
    size_t i, bad = 0, first = 0;
    int count = -1;

    CHECK(MPI_Get_count(st, MPI_BYTE, &count));
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || count != (int)size) {
        fprintf(stderr,
                "pingpong: rank %d, size %lu, iteration %d (%s): bad status: "
                "MPI_SOURCE %d (expected %d), MPI_TAG %d (expected %d), "
                "count %d (expected %lu)\n",
                rank, (unsigned long)size, iter, how, st->MPI_SOURCE, source,
                st->MPI_TAG, tag, count, (unsigned long)size);
        fail();
    }
    for (i = 0; i < size; i++) {
        if (buf[i] != pattern_byte(i, seed)) {
            if (bad == 0)
                first = i;
            bad++;
        }
    }
    if (bad) {
        fprintf(stderr,
                "pingpong: rank %d, size %lu, iteration %d (%s): %lu of %lu bytes "
                "differ; first at offset %lu: got 0x%02x, expected 0x%02x\n",
                rank, (unsigned long)size, iter, how, (unsigned long)bad,
                (unsigned long)size, (unsigned long)first, buf[first],
                pattern_byte(first, seed));
        fail();
    }
    for (i = 0; i < GUARD; i++) {
        if (buf[size + i] != GUARD_BYTE) {
            fprintf(stderr,
                    "pingpong: rank %d, size %lu, iteration %d (%s): receive wrote "
                    "past the end of the message (offset %lu is 0x%02x)\n",
                    rank, (unsigned long)size, iter, how, (unsigned long)(size + i),
                    buf[size + i]);
            fail();
        }
    }
}

/* Parses "4096", "4K", "1M", "16m", "1G". Returns 0 on error. */
static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v, mul = 1;
    if (*s == '-' || *s == '\0')
        return 0;
    v = strtoull(s, &end, 10);
    if (end == s)
        return 0;
    switch (*end) {
    case '\0': break;
    case 'k': case 'K': mul = 1024ULL; end++; break;
    case 'm': case 'M': mul = 1024ULL * 1024; end++; break;
    case 'g': case 'G': mul = 1024ULL * 1024 * 1024; end++; break;
    default: return 0;
    }
    if (*end != '\0' && !((*end == 'i' || *end == 'B') && end[1] == '\0'))
        return 0;
    if (v > (unsigned long long)INT_MAX / mul)
        return 0;
    *out = (size_t)(v * mul);
    return 1;
}

static int iterations_for(size_t size)
{
    if (size <= 64 * 1024)
        return 30;
    if (size <= 1024 * 1024)
        return 9;
    return 3;
}

/* One ping (0 -> 1) and one pong (1 -> 0) of `size` bytes. */
static void exchange(unsigned char *sbuf, unsigned char *rbuf, size_t size,
                     int iter, int size_index)
{
    int peer = 1 - rank;
    int n = (int)size;
    int tag = (size_index * 1000 + iter) % 30000; /* below the guaranteed MPI_TAG_UB */
    int method = iter % 3;
    int my_dir = rank;      /* direction of what this rank sends: 0 ping, 1 pong */
    int peer_dir = 1 - rank;
    MPI_Status st;
    MPI_Request reqs[2];
    MPI_Status sts[2];
    int done;

    fill(sbuf, size, iter, my_dir);
    poison(rbuf, size, iter, peer_dir);

    switch (method) {
    case 0: /* blocking, wildcard receive */
        if (rank == 0) {
            CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            CHECK(MPI_Recv(rbuf, n + GUARD, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           MPI_COMM_WORLD, &st));
        } else {
            CHECK(MPI_Recv(rbuf, n + GUARD, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                           MPI_COMM_WORLD, &st));
            verify(rbuf, size, iter, peer_dir, &st, peer, tag, "Send/Recv, wildcards");
            CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        break;
    case 1: /* pre-posted Irecv, Wait */
        CHECK(MPI_Irecv(rbuf, n + GUARD, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[0]));
        /* Make sure the peer's receive is posted before anything is sent. */
        CHECK(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, 30001, NULL, 0, MPI_BYTE, peer, 30001,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (rank == 0) {
            CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            CHECK(MPI_Wait(&reqs[0], &st));
        } else {
            CHECK(MPI_Wait(&reqs[0], &st));
            verify(rbuf, size, iter, peer_dir, &st, peer, tag, "Irecv/Wait");
            CHECK(MPI_Send(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        break;
    default: /* both nonblocking, Test polling, Waitall */
        if (rank == 0) {
            CHECK(MPI_Isend(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[0]));
            CHECK(MPI_Irecv(rbuf, n + GUARD, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[1]));
        } else {
            CHECK(MPI_Irecv(rbuf, n + GUARD, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[1]));
            done = 0;
            while (!done)
                CHECK(MPI_Test(&reqs[1], &done, &st));
            if (reqs[1] != MPI_REQUEST_NULL) {
                fprintf(stderr, "pingpong: rank %d: MPI_Test did not free a completed request\n",
                        rank);
                fail();
            }
            verify(rbuf, size, iter, peer_dir, &st, peer, tag, "Irecv/Test");
            CHECK(MPI_Isend(sbuf, n, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[0]));
        }
        CHECK(MPI_Waitall(2, reqs, sts));
        if (rank == 0)
            st = sts[1];
        break;
    }
    if (rank == 0)
        verify(rbuf, size, iter, peer_dir, &st, peer, tag,
               method == 0 ? "Send/Recv, wildcards" : method == 1 ? "Irecv/Wait"
                                                                : "Isend/Irecv/Waitall");
}

/* Both ranks send and receive at once with MPI_Sendrecv. */
static void sendrecv_exchange(unsigned char *sbuf, unsigned char *rbuf, size_t size,
                              int iter)
{
    int peer = 1 - rank;
    int tag = 30002;
    MPI_Status st;
    fill(sbuf, size, iter, 2 + rank);
    poison(rbuf, size, iter, 2 + peer);
    CHECK(MPI_Sendrecv(sbuf, (int)size, MPI_BYTE, peer, tag,
                       rbuf, (int)size + GUARD, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
    verify(rbuf, size, iter, 2 + peer, &st, peer, tag, "Sendrecv");
}

int main(int argc, char **argv)
{
    static const size_t default_sizes[] = {0, 1, 4095, 4096, 4097, 1 << 20, 16 << 20};
    size_t *sizes, max_size = 0;
    int nsizes, i, iter, world;
    unsigned char *sbuf, *rbuf;
    double t0;

    CHECK(MPI_Init(&argc, &argv));
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &world));

    if (argc > 1) {
        nsizes = argc - 1;
        sizes = malloc(sizeof *sizes * (size_t)nsizes);
        for (i = 0; i < nsizes; i++) {
            if (!sizes || !parse_size(argv[i + 1], &sizes[i]) || sizes[i] > (size_t)INT_MAX - GUARD) {
                if (rank == 0)
                    fprintf(stderr, "pingpong: bad message size '%s' "
                                    "(bytes, optional K/M/G suffix, at most 2 GiB - %d)\n",
                            argv[i + 1], GUARD + 1);
                MPI_Finalize();
                return 2;
            }
        }
    } else {
        nsizes = (int)(sizeof default_sizes / sizeof default_sizes[0]);
        sizes = malloc(sizeof default_sizes);
        if (sizes)
            memcpy(sizes, default_sizes, sizeof default_sizes);
    }
    if (world < 2) {
        if (rank == 0)
            fprintf(stderr, "pingpong: needs at least 2 ranks (got %d)\n", world);
        MPI_Finalize();
        return 2;
    }
    for (i = 0; i < nsizes; i++)
        if (sizes[i] > max_size)
            max_size = sizes[i];
    sbuf = malloc(max_size + GUARD);
    rbuf = malloc(max_size + GUARD);
    if (!sizes || !sbuf || !rbuf) {
        fprintf(stderr, "pingpong: rank %d: out of memory\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    t0 = MPI_Wtime();
    if (rank < 2) {
        for (i = 0; i < nsizes; i++) {
            int iters = iterations_for(sizes[i]);
            for (iter = 0; iter < iters; iter++)
                exchange(sbuf, rbuf, sizes[i], iter, i);
            sendrecv_exchange(sbuf, rbuf, sizes[i], iters);
            if (rank == 0) {
                printf("pingpong: %lu bytes: %d round trips + sendrecv checked\n",
                       (unsigned long)sizes[i], iters);
                fflush(stdout);
            }
        }
    }
    CHECK(MPI_Barrier(MPI_COMM_WORLD));

    if (rank == 0) {
        printf("pingpong: %d sizes in %.3f s\n", nsizes, MPI_Wtime() - t0);
        printf("pingpong: OK\n");
        fflush(stdout);
    }
    free(sbuf);
    free(rbuf);
    free(sizes);
    CHECK(MPI_Finalize());
    return 0;
}
