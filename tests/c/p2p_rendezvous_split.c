/* Rendezvous messages around and above btl_sm_coop_copy_min, where the receiver may ask a
 * sender that waits in MPI to write the second half of the data (cooperative rendezvous):
 * every byte checked, in the ways the protocol can go.
 *   1. blocking ping-pong (the sender waits: split);
 *   2. a window of Isends then Waitall (osu_bw's pattern), distinct buffers;
 *   3. the sender busy outside MPI before its Wait (no split, or a split that waits for it);
 *   4. truncation: a receive buffer smaller than the message (split on what fits);
 *   5. the receive posted after the RTS arrived (unexpected rendezvous);
 *   6. a window of 40 (more splits in flight than the receiver has claim words).
 * Ranks 0 and 1 talk; others only join the final check. */
#include "p2p_common.h"
#include <time.h>

static void fill(unsigned char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 12));
}

static size_t bad_at(const unsigned char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != (unsigned char)(i * 131u + seed * 7u + (i >> 12))) return i;
    return (size_t)-1;
}

static void spin_ms(int ms) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000.0 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

/* Rank 0 sends `w` messages of `n` bytes from distinct buffers (Isend), rank 1 receives them
 * (Irecv), then Waitall: osu_bw's pattern; every byte checked. Tags from `tag`. */
static void window(int rank, int peer, int w, size_t n, int tag) {
    unsigned char *win = malloc(n * w);
    MPI_Request *reqs = malloc(sizeof *reqs * w);
    for (int i = 0; i < w; i++) {
        if (rank == 0) {
            fill(win + i * n, n, tag + i);
            MPI_Isend(win + i * n, (int)n, MPI_BYTE, peer, tag + i, MPI_COMM_WORLD, &reqs[i]);
        } else {
            memset(win + i * n, 0, n);
            MPI_Irecv(win + i * n, (int)n, MPI_BYTE, peer, tag + i, MPI_COMM_WORLD, &reqs[i]);
        }
    }
    MPI_Waitall(w, reqs, MPI_STATUSES_IGNORE);
    if (rank == 1)
        for (int i = 0; i < w; i++) {
            size_t at = bad_at(win + i * n, n, tag + i);
            CHECK(at == (size_t)-1, "window of %d x %zu bytes, message %d: first bad byte %zd", w, n,
                  i, (ssize_t)at);
        }
    free(reqs);
    free(win);
}

int main(int argc, char **argv) {
    static const size_t sizes[] = {16385, 32767, 32768, 32769, 65536 + 123, 262144, 1048576 + 7,
                                   4194304};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t max = 4194304 + 4096;
    unsigned char *a = malloc(max), *b = malloc(max);
    if (rank <= 1 && size >= 2) {
        int peer = 1 - rank;
        /* 1. ping-pong: rank 0 sends, rank 1 checks and echoes, rank 0 checks. */
        for (int s = 0; s < nsizes; s++) {
            size_t n = sizes[s];
            for (int rep = 0; rep < 3; rep++) {
                unsigned seed = (unsigned)(s * 10 + rep);
                MPI_Status st;
                int count;
                if (rank == 0) {
                    fill(a, n, seed);
                    MPI_Send(a, (int)n, MPI_BYTE, peer, s, MPI_COMM_WORLD);
                    memset(b, 0, n);
                    MPI_Recv(b, (int)n, MPI_BYTE, peer, s, MPI_COMM_WORLD, &st);
                } else {
                    memset(b, 0, n);
                    MPI_Recv(b, (int)n, MPI_BYTE, peer, s, MPI_COMM_WORLD, &st);
                    MPI_Send(b, (int)n, MPI_BYTE, peer, s, MPI_COMM_WORLD);
                }
                MPI_Get_count(&st, MPI_BYTE, &count);
                size_t at = bad_at(b, n, seed);
                CHECK(at == (size_t)-1 && count == (int)n,
                      "ping-pong %zu bytes rep %d: rank %d got %d bytes, first bad byte %zd", n, rep,
                      rank, count, (ssize_t)at);
            }
        }
        /* 2. a window of 8 Isends of 512 KiB + 3 bytes, distinct buffers. */
        window(rank, peer, 8, 524288 + 3, 50);
        /* 3. the sender computes outside MPI before waiting: the receive still completes. */
        {
            size_t n = 2097152;
            MPI_Request r;
            if (rank == 0) {
                fill(a, n, 77);
                MPI_Isend(a, (int)n, MPI_BYTE, peer, 60, MPI_COMM_WORLD, &r);
                spin_ms(50);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                memset(b, 0, n);
                MPI_Recv(b, (int)n, MPI_BYTE, peer, 60, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                size_t at = bad_at(b, n, 77);
                CHECK(at == (size_t)-1, "busy sender: first bad byte %zd", (ssize_t)at);
            }
        }
        /* 4. truncation: 1 MiB sent into a 300000-byte buffer; nothing written past it. */
        {
            size_t n = 1048576, cap = 300000;
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
            if (rank == 0) {
                fill(a, n, 88);
                MPI_Send(a, (int)n, MPI_BYTE, peer, 70, MPI_COMM_WORLD);
            } else {
                MPI_Status st;
                memset(b, 0xEE, cap + 4096);
                int rc = MPI_Recv(b, (int)cap, MPI_BYTE, peer, 70, MPI_COMM_WORLD, &st);
                int cls;
                MPI_Error_class(rc, &cls);
                CHECK(cls == MPI_ERR_TRUNCATE, "truncation: class %d, not MPI_ERR_TRUNCATE", cls);
                size_t at = bad_at(b, cap, 88);
                CHECK(at == (size_t)-1, "truncation: first bad byte %zd", (ssize_t)at);
                for (size_t i = cap; i < cap + 4096; i++)
                    if (b[i] != 0xEE) {
                        CHECK(0, "truncation: byte %zu past the buffer was written", i);
                        break;
                    }
            }
            MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        }
        /* 6. a window of 40 Isends of 40000 bytes: more than the 13 claim words at once. */
        window(rank, peer, 40, 40000, 90);
        /* 5. the receive is posted after the RTS has arrived. */
        {
            size_t n = 3 * 1048576 + 5;
            if (rank == 0) {
                fill(a, n, 99);
                MPI_Send(a, (int)n, MPI_BYTE, peer, 80, MPI_COMM_WORLD);
            } else {
                int flag = 0;
                while (!flag) MPI_Iprobe(peer, 80, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                memset(b, 0, n);
                MPI_Recv(b, (int)n, MPI_BYTE, peer, 80, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                size_t at = bad_at(b, n, 99);
                CHECK(at == (size_t)-1, "unexpected rendezvous: first bad byte %zd", (ssize_t)at);
            }
        }
    }
    free(a);
    free(b);
    return finish();
}
