/* Windows of MPI_Isend to one peer, as OSU's osu_bw sends them: the transport may hold all but
 * the first to write them together (btl tcp's burst coalescing). Every message arrives once, in
 * order, with its bytes: windows of 64 at sizes around the batching limits, a blocking MPI_Send
 * in the middle of a window (it must go after the held ones, not before), a window followed by
 * a blocking receive of the peer's answer (the wait must write the held ones), a window of
 * mixed sizes to every other rank, and sends completed by MPI_Wait or freed, after which the
 * sender makes no MPI call until the receiver has them all (said through a file): a held send
 * would never arrive. */
#include "p2p_common.h"
#include <unistd.h>

/* Rank 0 sends 5 messages to rank 1, each completed by MPI_Wait (or freed), then waits without
 * any MPI call until rank 1 has received them all and created `flag`. */
static void sends_then_silence(const char *flag, int freed) {
    int rank, v[5];
    MPI_Request r;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int k = 0; k < 5; k++) {
            v[k] = k * 11 + freed;
            MPI_Isend(&v[k], 1, MPI_INT, 1, 40 + freed, MPI_COMM_WORLD, &r);
            if (freed) MPI_Request_free(&r);
            else MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        while (access(flag, F_OK) != 0) usleep(1000); /* bounded by mpirun --timeout */
        unlink(flag);
    } else if (rank == 1) {
        for (int k = 0; k < 5; k++) {
            int got = -1;
            MPI_Recv(&got, 1, MPI_INT, 0, 40 + freed, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            CHECK(got == k * 11 + freed, "rank 1: message %d of the silent sender: %d", k, got);
        }
        FILE *f = fopen(flag, "w");
        if (f) fclose(f);
    }
}

#define W 64

static char byte_of(int msg, int i) { return (char)(msg * 131 + i * 7 + 1); }

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const int sizes[] = {0, 1, 7, 100, 1000, 1020, 1024, 1037, 4096, 16384, 16385, 40000};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    char *out = malloc((size_t)W * 40000), *in = malloc((size_t)W * 40000);
    MPI_Request rq[2 * W];

    for (int s = 0; s < nsizes; s++) {
        int n = sizes[s];
        for (int k = 0; k < W; k++)
            for (int i = 0; i < n; i++) out[(size_t)k * n + i] = byte_of(s * W + k, i);
        memset(in, 0, (size_t)W * n);
        for (int k = 0; k < W; k++)
            MPI_Irecv(in + (size_t)k * n, n, MPI_CHAR, from, 5, MPI_COMM_WORLD, &rq[W + k]);
        for (int k = 0; k < W; k++) {
            if (k == W / 2) {
                MPI_Send(out + (size_t)k * n, n, MPI_CHAR, to, 5, MPI_COMM_WORLD);
                rq[k] = MPI_REQUEST_NULL;
            } else {
                MPI_Isend(out + (size_t)k * n, n, MPI_CHAR, to, 5, MPI_COMM_WORLD, &rq[k]);
            }
        }
        MPI_Waitall(2 * W, rq, MPI_STATUSES_IGNORE);
        int bad = -1;
        for (int k = 0; k < W && bad < 0; k++)
            for (int i = 0; i < n; i++)
                if (in[(size_t)k * n + i] != byte_of(s * W + k, i)) { bad = k; break; }
        CHECK(bad < 0, "rank %d: window of %d B: message %d wrong", rank, n, bad);
    }

    /* A window, then a blocking receive of the answer the peer sends once it has them all. */
    if (size > 1 && rank < 2) {
        int n = 100, ans = 0;
        if (rank == 0) {
            for (int k = 0; k < 10; k++)
                MPI_Isend(out + k * n, n, MPI_CHAR, 1, 6, MPI_COMM_WORLD, &rq[k]);
            MPI_Recv(&ans, 1, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Waitall(10, rq, MPI_STATUSES_IGNORE);
            CHECK(ans == 10, "rank 0: answer %d", ans);
        } else {
            for (int k = 0; k < 10; k++) {
                MPI_Recv(in, n, MPI_CHAR, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                ans += in[0] == out[k * n];
            }
            MPI_Send(&ans, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
        }
    }

    /* Mixed sizes to every rank at once, tags telling them apart. */
    int nreq = 0;
    for (int r = 0; r < size; r++) {
        for (int k = 0; k < 8; k++) {
            int n = sizes[(k + r) % nsizes] % 20000;
            MPI_Irecv(in + (size_t)(r * 8 + k) * 20000, n, MPI_CHAR, r, 100 + k, MPI_COMM_WORLD,
                      &rq[nreq++]);
        }
    }
    for (int r = 0; r < size; r++) {
        for (int k = 0; k < 8; k++) {
            int n = sizes[(k + rank) % nsizes] % 20000;
            char *b = out + (size_t)(r * 8 + k) * 20000;
            for (int i = 0; i < n; i++) b[i] = byte_of(1000 + rank * 8 + k, i);
            MPI_Isend(b, n, MPI_CHAR, r, 100 + k, MPI_COMM_WORLD, &rq[nreq++]);
        }
    }
    MPI_Waitall(nreq, rq, MPI_STATUSES_IGNORE);
    for (int r = 0; r < size; r++)
        for (int k = 0; k < 8; k++) {
            int n = sizes[(k + r) % nsizes] % 20000;
            char *b = in + (size_t)(r * 8 + k) * 20000;
            for (int i = 0; i < n; i++)
                if (b[i] != byte_of(1000 + r * 8 + k, i)) {
                    CHECK(0, "rank %d: message %d from %d wrong at %d", rank, k, r, i);
                    break;
                }
        }
    if (size > 1) {
        char flag[64];
        if (rank == 0) snprintf(flag, sizeof flag, "/tmp/rmpi-isend-windows-%d", (int)getpid());
        MPI_Bcast(flag, sizeof flag, MPI_CHAR, 0, MPI_COMM_WORLD);
        sends_then_silence(flag, 0);
        MPI_Barrier(MPI_COMM_WORLD);
        sends_then_silence(flag, 1);
    }
    return finish();
}
