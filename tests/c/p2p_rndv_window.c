/* Windows of rendezvous receives, as osu_bw posts them: the receiver reads a window's messages
 * from one sender in one single-copy call (btl sm's batched CMA reads), and from several
 * senders in turn. Every byte is checked: a window of W messages of mixed rendezvous sizes to
 * the next rank into distinct buffers; at np >= 3, windows from two senders to rank 0 posted
 * interleaved (ANY_TAG too); a window into one buffer with equal messages (OSU's pattern);
 * a receive too small for its message in the middle of a window (MPI_ERR_TRUNCATE for it
 * alone, the others intact). */
#include "p2p_common.h"

#define W 24

static char byte_of(int src, int msg, size_t i) { return (char)(src * 37 + msg * 131 + i * 7 + 1); }

static size_t size_of(int msg) { return 20000 + (size_t)msg * 11111; }

static void fill(char *b, int src, int msg, size_t n) {
    for (size_t i = 0; i < n; i++) b[i] = byte_of(src, msg, i);
}

static int intact(const char *b, int src, int msg, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != byte_of(src, msg, i)) return 0;
    return 1;
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    size_t max = size_of(W - 1);
    char **out = malloc(W * sizeof *out), **in = malloc(W * sizeof *in);
    for (int k = 0; k < W; k++) {
        out[k] = malloc(max);
        in[k] = malloc(max);
    }
    MPI_Request req[2 * W];

    /* 1: a ring of windows, distinct buffers. */
    for (int k = 0; k < W; k++) {
        fill(out[k], rank, k, size_of(k));
        memset(in[k], 0, max);
        MPI_Irecv(in[k], (int)size_of(k), MPI_CHAR, from, 1, MPI_COMM_WORLD, &req[k]);
    }
    for (int k = 0; k < W; k++)
        MPI_Isend(out[k], (int)size_of(k), MPI_CHAR, to, 1, MPI_COMM_WORLD, &req[W + k]);
    CHECK(MPI_Waitall(2 * W, req, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "rank %d: ring waitall", rank);
    for (int k = 0; k < W; k++)
        CHECK(intact(in[k], from, k, size_of(k)), "rank %d: ring message %d from %d", rank, k, from);

    /* 2: two senders, one receiver, windows interleaved. */
    if (size >= 3) {
        int half = W / 2;
        if (rank == 0) {
            MPI_Status st[W];
            for (int k = 0; k < half; k++) {
                memset(in[2 * k], 0, max);
                memset(in[2 * k + 1], 0, max);
                MPI_Irecv(in[2 * k], (int)max, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[2 * k]);
                MPI_Irecv(in[2 * k + 1], (int)max, MPI_CHAR, 2, k % 2 ? MPI_ANY_TAG : 2,
                          MPI_COMM_WORLD, &req[2 * k + 1]);
            }
            CHECK(MPI_Waitall(W, req, st) == MPI_SUCCESS, "rank 0: two senders");
            int next[3] = {0, 0, 0};
            for (int k = 0; k < W; k++) {
                int src = st[k].MPI_SOURCE, n;
                MPI_Get_count(&st[k], MPI_CHAR, &n);
                CHECK(src == 1 + k % 2, "rank 0: receive %d: source %d", k, src);
                if (src != 1 && src != 2) continue;
                int msg = next[src]++;
                CHECK((size_t)n == size_of(msg) && intact(in[k], src, msg, (size_t)n),
                      "rank 0: message %d of rank %d (%d bytes)", msg, src, n);
            }
        } else if (rank <= 2) {
            for (int k = 0; k < half; k++) {
                fill(out[k], rank, k, size_of(k));
                MPI_Isend(out[k], (int)size_of(k), MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[k]);
            }
            MPI_Waitall(half, req, MPI_STATUSES_IGNORE);
        }
    }

    /* 3: OSU's window: every message the same, every receive into one buffer. */
    size_t n = 65536;
    fill(out[0], rank, 0, n);
    memset(in[0], 0, n);
    for (int k = 0; k < W; k++)
        MPI_Irecv(in[0], (int)n, MPI_CHAR, from, 3, MPI_COMM_WORLD, &req[k]);
    for (int k = 0; k < W; k++)
        MPI_Isend(out[0], (int)n, MPI_CHAR, to, 3, MPI_COMM_WORLD, &req[W + k]);
    MPI_Waitall(2 * W, req, MPI_STATUSES_IGNORE);
    CHECK(intact(in[0], from, 0, n), "rank %d: one-buffer window", rank);

    /* 4: a receive too small in the middle of a window. */
    MPI_Status st[W];
    for (int k = 0; k < W; k++) {
        fill(out[k], rank, k, size_of(k));
        memset(in[k], 0, max);
        int cap = k == W / 2 ? (int)size_of(k) - 1 : (int)size_of(k);
        MPI_Irecv(in[k], cap, MPI_CHAR, from, 4, MPI_COMM_WORLD, &req[k]);
    }
    for (int k = 0; k < W; k++)
        MPI_Isend(out[k], (int)size_of(k), MPI_CHAR, to, 4, MPI_COMM_WORLD, &req[W + k]);
    MPI_Waitall(W, req, st);
    MPI_Waitall(W, req + W, MPI_STATUSES_IGNORE);
    for (int k = 0; k < W; k++) {
        int cls;
        MPI_Error_class(st[k].MPI_ERROR, &cls);
        if (k == W / 2)
            CHECK(cls == MPI_ERR_TRUNCATE, "rank %d: short receive %d: class %d", rank, k, cls);
        else
            CHECK(cls == MPI_SUCCESS && intact(in[k], from, k, size_of(k)),
                  "rank %d: window message %d beside a short receive (class %d)", rank, k, cls);
    }

    for (int k = 0; k < W; k++) {
        free(out[k]);
        free(in[k]);
    }
    free(out);
    free(in);
    return finish();
}
