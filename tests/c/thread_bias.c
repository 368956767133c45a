/* Biased MPI_THREAD_MULTIPLE (runtime.rs `BIAS`): the runtime belongs to the thread that
 * initialised MPI until another thread calls, whose first call takes it away (`revoke_bias`).
 *
 * 1. alone: the main thread exchanges windows of Isend/Irecv with both neighbours, Sendrecv,
 *    an Iprobe, a window's fence and put (a table reached between calls, `runtime::held`), all
 *    without a lock, every byte checked; the window lives on, so progress visits its table;
 * 2. revoked while busy: a second thread starts after a random delay (argv[1] selects the
 *    seed) while the main thread loops on MPI_Iprobe and MPI_Comm_rank and then waits in
 *    MPI_Recv for a reply that the right neighbour's second thread sends only after a token
 *    from this rank's second thread: the revoking call must get in between the owner's calls
 *    or while it waits, never wait behind the owner's wait;
 * 3. after: both threads exchange again at once, then the main thread alone.
 * Rank 0 prints " No Errors" when every rank found none. */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;
static atomic_int errs;
static MPI_Comm ca, cb;
static atomic_int helper_in;

#define N 512

static void exchange(MPI_Comm c, int tag, int round) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    static _Thread_local int out[8][N], in[8][N];
    MPI_Request q[16];
    for (int w = 0; w < 8; w++) {
        for (int i = 0; i < N; i++) out[w][i] = rank * 1000003 + round * 7919 + w * N + i;
        MPI_Irecv(in[w], N, MPI_INT, left, tag + w, c, &q[w]);
    }
    for (int w = 0; w < 8; w++) MPI_Isend(out[w], N, MPI_INT, right, tag + w, c, &q[8 + w]);
    MPI_Waitall(16, q, MPI_STATUSES_IGNORE);
    for (int w = 0; w < 8; w++)
        for (int i = 0; i < N; i++)
            if (in[w][i] != left * 1000003 + round * 7919 + w * N + i) {
                if (errs++ < 5) fprintf(stderr, "rank %d: round %d window %d [%d] = %d\n", rank, round, w, i, in[w][i]);
                break;
            }
}

static void *helper(void *arg) {
    unsigned delay = *(unsigned *)arg;
    for (volatile unsigned i = 0; i < delay; i++) {}
    atomic_store(&helper_in, 1);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, tok = rank, got = -1;
    /* First call of this thread: revokes the bias. */
    MPI_Send(&tok, 1, MPI_INT, right, 1, ca);
    MPI_Recv(&got, 1, MPI_INT, left, 1, ca, MPI_STATUS_IGNORE);
    if (got != left && errs++ < 5) fprintf(stderr, "rank %d: token %d from %d\n", rank, got, left);
    int reply = 100 + rank;
    /* The left neighbour's main thread waits for this. */
    MPI_Send(&reply, 1, MPI_INT, left, 2, cb);
    for (int r = 0; r < 20; r++) exchange(ca, 100, r);
    return NULL;
}

int main(int argc, char **argv) {
    int provided, flag;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (provided != MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "provided %d\n", provided);
        errs++;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &ca);
    MPI_Comm_dup(MPI_COMM_WORLD, &cb);

    /* 1. alone */
    for (int r = 0; r < 50; r++) exchange(MPI_COMM_WORLD, 10, r);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, s = rank, g = -1;
    MPI_Sendrecv(&s, 1, MPI_INT, right, 3, &g, 1, MPI_INT, left, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (g != left) errs++;
    int *base;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
    *base = -1;
    MPI_Win_fence(0, win);
    MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    if (*base != left && errs++ < 5) fprintf(stderr, "rank %d: put gave %d\n", rank, *base);
    /* The window stays: every progress turn then visits the window table (`held` from
     * inside a call), also while the bias is being revoked. */

    /* 2. revoked while busy */
    unsigned seed = argc > 1 ? (unsigned)atoi(argv[1]) : 1;
    srand(seed * 977 + rank);
    unsigned delay = (unsigned)(rand() % 200000);
    pthread_t t;
    pthread_create(&t, NULL, helper, &delay);
    int me = -1, loops = 0;
    while (!atomic_load(&helper_in) || loops < 100) {
        MPI_Iprobe(MPI_ANY_SOURCE, 99, ca, &flag, MPI_STATUS_IGNORE);
        MPI_Comm_rank(cb, &me);
        if (me != rank) errs++;
        loops++;
    }
    int reply = -1;
    MPI_Recv(&reply, 1, MPI_INT, right, 2, cb, MPI_STATUS_IGNORE);
    if (reply != 100 + right && errs++ < 5) fprintf(stderr, "rank %d: reply %d\n", rank, reply);

    /* 3. after: both threads at once, then this one alone */
    for (int r = 0; r < 20; r++) exchange(cb, 200, r);
    pthread_join(t, NULL);
    for (int r = 0; r < 20; r++) exchange(MPI_COMM_WORLD, 300, r);
    MPI_Win_free(&win);

    MPI_Comm_free(&ca);
    MPI_Comm_free(&cb);
    int all, mine = atomic_load(&errs);
    MPI_Reduce(&mine, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (all == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", all);
    }
    MPI_Finalize();
    return 0;
}
