/* Point-to-point send modes and calls beyond Send/Recv with derived datatypes: a vector with
 * holes sent, received as a resized vector or as plain ints, in Ssend/Issend, Bsend/Ibsend,
 * Rsend, persistent Send_init/Bsend_init/Ssend_init/Recv_init, Mprobe/Mrecv, Improbe/Imrecv,
 * Sendrecv_replace and Isendrecv_replace; small (eager) and large (rendezvous) messages,
 * around a ring. Every data int and every hole is checked. */
#include "coll_util.h"

#define SENT -7

static MPI_Datatype vec, rvec; /* ints at 0, 2, 4: extent 5 / extent 6 */

/* int index of data int j in a buffer of n elements of the type with extent ext (3 per). */
static int idx(int ext, int j) { return (j / 3) * ext + (j % 3) * 2; }

static int *mk(int n, int ext) {
    int *b = xmalloc((n * ext + 1) * sizeof(int));
    for (int i = 0; i < n * ext + 1; i++)
        b[i] = SENT;
    return b;
}
static int v(int from, int j, int round) { return from * 1000000 + round * 100000 + j; }
static void fill(int *b, int n, int ext, int from, int round) {
    for (int j = 0; j < 3 * n; j++)
        b[idx(ext, j)] = v(from, j, round);
}
/* The data of `from` at round `round` in a buffer of `type` (ext 0: plain ints); holes intact. */
static void check(int *b, int n, int ext, int from, int round, const char *what) {
    int len = ext ? n * ext : 3 * n;
    char *data = calloc(len + 1, 1);
    int bad = 0;
    for (int j = 0; j < 3 * n; j++) {
        int i = ext ? idx(ext, j) : j;
        data[i] = 1;
        if (b[i] != v(from, j, round) && bad++ < 3)
            CHECK(0, "%s n %d: data %d = %d, want %d", what, n, j, b[i], v(from, j, round));
    }
    for (int i = 0; i < len + 1; i++)
        if (!data[i] && b[i] != SENT && bad++ < 3)
            CHECK(0, "%s n %d: hole %d = %d", what, n, i, b[i]);
    if (bad)
        errs++;
    free(data);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Type_vector(3, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    MPI_Type_create_resized(vec, 0, 6 * sizeof(int), &rvec);
    MPI_Type_commit(&rvec);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int bsize = 4 * (3 * 6000 * sizeof(int) + MPI_BSEND_OVERHEAD);
    void *battach = xmalloc(bsize);
    MPI_Buffer_attach(battach, bsize);
    int sizes[2] = {2, 6000};
    for (int si = 0; si < 2; si++) {
        int n = sizes[si], round = 0;
        /* Modes: 0 Ssend, 1 Issend, 2 Bsend, 3 Ibsend, 4 Rsend. Receive alternates between
         * rvec elements and plain ints. */
        for (int mode = 0; mode < 5; mode++, round++) {
            int *s = mk(n, 5), *r = mk(n, 6);
            fill(s, n, 5, rank, round);
            int plain = mode % 2;
            MPI_Request rq, sq = MPI_REQUEST_NULL;
            MPI_Irecv(r, plain ? 3 * n : n, plain ? MPI_INT : rvec, from, mode, MPI_COMM_WORLD,
                      &rq);
            MPI_Barrier(MPI_COMM_WORLD); /* every receive is posted (Rsend) */
            switch (mode) {
            case 0: MPI_Ssend(s, n, vec, to, mode, MPI_COMM_WORLD); break;
            case 1: MPI_Issend(s, n, vec, to, mode, MPI_COMM_WORLD, &sq); break;
            case 2: MPI_Bsend(s, n, vec, to, mode, MPI_COMM_WORLD); break;
            case 3: MPI_Ibsend(s, n, vec, to, mode, MPI_COMM_WORLD, &sq); break;
            case 4: MPI_Rsend(s, n, vec, to, mode, MPI_COMM_WORLD); break;
            }
            MPI_Wait(&sq, MPI_STATUS_IGNORE);
            MPI_Status st;
            MPI_Wait(&rq, &st);
            int c = -1;
            MPI_Get_count(&st, plain ? MPI_INT : rvec, &c);
            CHECK(c == (plain ? 3 * n : n), "mode %d count %d", mode, c);
            check(r, n, plain ? 0 : 6, from, round, "mode");
            free(s);
            free(r);
        }
        /* Persistent: Send_init, Bsend_init, Ssend_init against Recv_init, started twice. */
        for (int pm = 0; pm < 3; pm++) {
            int *s = mk(n, 5), *r = mk(n, 6);
            MPI_Request p[2];
            MPI_Recv_init(r, n, rvec, from, 50 + pm, MPI_COMM_WORLD, &p[0]);
            if (pm == 0)
                MPI_Send_init(s, n, vec, to, 50 + pm, MPI_COMM_WORLD, &p[1]);
            else if (pm == 1)
                MPI_Bsend_init(s, n, vec, to, 50 + pm, MPI_COMM_WORLD, &p[1]);
            else
                MPI_Ssend_init(s, n, vec, to, 50 + pm, MPI_COMM_WORLD, &p[1]);
            for (int k = 0; k < 2; k++, round++) {
                fill(s, n, 5, rank, round);
                MPI_Startall(2, p);
                MPI_Waitall(2, p, MPI_STATUSES_IGNORE);
                check(r, n, 6, from, round, "persistent");
            }
            MPI_Request_free(&p[0]);
            MPI_Request_free(&p[1]);
            free(s);
            free(r);
        }
        /* Mprobe/Mrecv and Improbe/Imrecv into rvec. */
        for (int k = 0; k < 2; k++, round++) {
            int *s = mk(n, 5), *r = mk(n, 6);
            fill(s, n, 5, rank, round);
            MPI_Request sq;
            MPI_Isend(s, n, vec, to, 70, MPI_COMM_WORLD, &sq);
            MPI_Message m;
            MPI_Status st;
            if (k == 0) {
                MPI_Mprobe(from, 70, MPI_COMM_WORLD, &m, &st);
                MPI_Mrecv(r, n, rvec, &m, &st);
            } else {
                int flag = 0;
                while (!flag)
                    MPI_Improbe(from, 70, MPI_COMM_WORLD, &flag, &m, &st);
                MPI_Request q;
                MPI_Imrecv(r, n, rvec, &m, &q);
                MPI_Wait(&q, &st);
            }
            MPI_Wait(&sq, MPI_STATUS_IGNORE);
            check(r, n, 6, from, round, k ? "imrecv" : "mrecv");
            free(s);
            free(r);
        }
        /* Sendrecv_replace and Isendrecv_replace in a vector (holes must survive). */
        for (int k = 0; k < 2; k++, round++) {
            int *b = mk(n, 5);
            fill(b, n, 5, rank, round);
            if (k == 0)
                MPI_Sendrecv_replace(b, n, vec, to, 80, from, 80, MPI_COMM_WORLD,
                                     MPI_STATUS_IGNORE);
            else {
                MPI_Request q;
                MPI_Isendrecv_replace(b, n, vec, to, 81, from, 81, MPI_COMM_WORLD, &q);
                MPI_Wait(&q, MPI_STATUS_IGNORE);
            }
            check(b, n, 5, from, round, k ? "isendrecv_replace" : "sendrecv_replace");
            free(b);
        }
    }
    int dsz;
    void *dp;
    MPI_Buffer_detach(&dp, &dsz);
    free(battach);
    MPI_Type_free(&vec);
    MPI_Type_free(&rvec);
    return finish();
}
