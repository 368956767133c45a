/* MPI_Send/MPI_Recv's latency path (a blocking receive that waits without a request) against
 * what the general path guarantees: non-overtaking order when the first matching message is a
 * rendezvous or a multi-fragment one that arrives while the receive already waits, wildcards,
 * statuses and truncation. Rank 0 talks to every other rank in turn; any number of ranks. */
#include "p2p_common.h"
#include <time.h>

#define BIG (1 << 20)
#define MID (48 << 10) /* several eager fragments with btl_sm_eager_limit 65536 */

static void pause_ms(int ms) {
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

static void fill(char *b, int n, int seed) {
    for (int i = 0; i < n; i++) b[i] = (char)(i * 7 + seed);
}

static int same(const char *b, int n, int seed) {
    for (int i = 0; i < n; i++)
        if (b[i] != (char)(i * 7 + seed)) return 0;
    return 1;
}

/* The receiver waits first; then a long message and a short one with the same tag arrive.
 * The blocking receive must get the long one, whatever protocol carries it. */
static void long_then_short(int rank, int peer, int len, char *buf) {
    int small = 42, got = 0, count = -1;
    MPI_Status st;
    if (rank == 0) {
        pause_ms(50); /* let the receiver start waiting */
        fill(buf, len, peer);
        MPI_Send(buf, len, MPI_CHAR, peer, 5, MPI_COMM_WORLD);
        MPI_Send(&small, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
    } else {
        memset(buf, 0, len);
        MPI_Recv(buf, len, MPI_CHAR, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Get_count(&st, MPI_CHAR, &count);
        CHECK(count == len && st.MPI_SOURCE == 0 && st.MPI_TAG == 5 && same(buf, len, rank),
              "rank %d: long message (%d bytes) overtaken or wrong: count %d", rank, len, count);
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
        CHECK(got == 42, "rank %d: short message after %d bytes: got %d", rank, len, got);
    }
}

int main(int argc, char **argv) {
    int rank, size, v, count;
    char *buf;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    buf = malloc(BIG);

    for (int peer = 1; peer < size; peer++) {
        if (rank != 0 && rank != peer) continue;
        long_then_short(rank, peer, BIG, buf);
        long_then_short(rank, peer, MID, buf);
        long_then_short(rank, peer, 300, buf);

        /* Wildcards, status, and tags told apart while waiting. */
        if (rank == 0) {
            pause_ms(20);
            v = 7;
            MPI_Send(&v, 1, MPI_INT, peer, 11, MPI_COMM_WORLD);
            v = 8;
            MPI_Send(&v, 1, MPI_INT, peer, 12, MPI_COMM_WORLD);
        } else {
            MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, &st);
            CHECK(v == 8 && st.MPI_SOURCE == 0 && st.MPI_TAG == 12,
                  "rank %d: tag 12 wanted, got %d (tag %d)", rank, v, st.MPI_TAG);
            MPI_Recv(&v, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            CHECK(v == 7 && st.MPI_TAG == 11, "rank %d: tag 11 after 12: got %d", rank, v);
        }

        /* Truncation through the latency path: an error class, the status counts what fit. */
        if (rank == 0) {
            pause_ms(20);
            fill(buf, 100, 3);
            MPI_Send(buf, 100, MPI_CHAR, peer, 13, MPI_COMM_WORLD);
        } else {
            int rc, cls;
            char small[10];
            rc = MPI_Recv(small, 10, MPI_CHAR, 0, 13, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            MPI_Get_count(&st, MPI_CHAR, &count);
            CHECK(cls == MPI_ERR_TRUNCATE && count == 10 && same(small, 10, 3),
                  "rank %d: truncation: class %d count %d", rank, cls, count);
        }

        /* The same for a message of several fragments copied in while they arrive (with
         * btl_sm_eager_limit 65536): what fits lands, the rest is dropped, and the next
         * message is intact. */
        if (rank == 0) {
            pause_ms(20);
            fill(buf, MID, 4);
            MPI_Send(buf, MID, MPI_CHAR, peer, 15, MPI_COMM_WORLD);
            MPI_Send(&size, 1, MPI_INT, peer, 15, MPI_COMM_WORLD);
        } else {
            int rc, cls, after = -1;
            memset(buf, 0, MID);
            rc = MPI_Recv(buf, MID / 2 + 1, MPI_CHAR, 0, 15, MPI_COMM_WORLD, &st);
            MPI_Error_class(rc, &cls);
            MPI_Get_count(&st, MPI_CHAR, &count);
            CHECK(cls == MPI_ERR_TRUNCATE && count == MID / 2 + 1 && same(buf, MID / 2 + 1, 4) &&
                      buf[MID / 2 + 1] == 0,
                  "rank %d: truncated long message: class %d count %d", rank, cls, count);
            MPI_Recv(&after, 1, MPI_INT, 0, 15, MPI_COMM_WORLD, &st);
            CHECK(after == size, "rank %d: message after a truncated one: %d", rank, after);
        }

        /* A receive posted before the blocking one keeps its place in matching order. */
        if (rank == 0) {
            pause_ms(20);
            v = 1;
            MPI_Send(&v, 1, MPI_INT, peer, 14, MPI_COMM_WORLD);
            v = 2;
            MPI_Send(&v, 1, MPI_INT, peer, 14, MPI_COMM_WORLD);
        } else {
            int first = 0, second = 0;
            MPI_Request r;
            MPI_Irecv(&first, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, &r);
            MPI_Recv(&second, 1, MPI_INT, 0, 14, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            CHECK(first == 1 && second == 2, "rank %d: irecv then recv got %d, %d", rank, first,
                  second);
        }
    }

    /* Messages to oneself take the same path. */
    v = rank;
    {
        MPI_Request r;
        int back = -1;
        MPI_Isend(&v, 1, MPI_INT, rank, 20, MPI_COMM_WORLD, &r);
        MPI_Recv(&back, 1, MPI_INT, rank, 20, MPI_COMM_WORLD, &st);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        CHECK(back == rank && st.MPI_SOURCE == rank, "rank %d: self message got %d", rank, back);
    }

    free(buf);
    return finish();
}
