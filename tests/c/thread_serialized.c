/* MPI_THREAD_SERIALIZED: MPI_Init_thread(SERIALIZED) provides SERIALIZED, and threads that take
 * turns behind a mutex (the application's serialization) all call MPI: point-to-point,
 * collectives, a user op made on one thread and used on others, an RMA window made on one
 * thread and used by all, every value checked. Every rank runs the same sequence of turns, so
 * the collectives match.
 *
 * Modes (argv[1]):
 *   (none)     the above; rank 0 prints " No Errors".
 *   funneled   MPI_Init_thread(FUNNELED) provides FUNNELED; a second thread's MPI call must
 *              end the job with an error naming the thread level (never run as a data race).
 *   overlap    under SERIALIZED, the main thread calls MPI while another thread is inside a
 *              call (a user op that waits for it): the call must fail with an error saying so. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 3      /* worker threads; the main thread takes turns too */
#define ROUNDS 16

static int rank, size, errs;
static MPI_Op userop;
static MPI_Win win;
static int winbuf[2];

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            errs++;                                                          \
            fprintf(stderr, "rank %d: ", rank);                              \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
        }                                                                    \
    } while (0)

/* inout = in + inout + 1: a reduction over n ranks adds n - 1, whatever the order. */
static void plus_one(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i] + 1;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn;

/* One turn: participant `k` (NT is the main thread), its round `r`, global turn number `t`. */
static void one_turn(int k, int r, int t) {
    (void)r;
    int flag, level;
    MPI_Is_thread_main(&flag);
    CHECK(flag == (k == NT), "turn %d: MPI_Is_thread_main %d on participant %d", t, flag, k);
    MPI_Query_thread(&level);
    CHECK(level == MPI_THREAD_SERIALIZED, "turn %d: MPI_Query_thread %d", t, level);

    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    /* Ring exchange, blocking and non-blocking in turn. */
    int out = t * 1000 + rank, in = -1;
    if (t % 2 == 0) {
        MPI_Sendrecv(&out, 1, MPI_INT, right, t, &in, 1, MPI_INT, left, t, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    } else {
        MPI_Request rq[2];
        MPI_Irecv(&in, 1, MPI_INT, left, t, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(&out, 1, MPI_INT, right, t, MPI_COMM_WORLD, &rq[1]);
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    }
    CHECK(in == t * 1000 + left, "turn %d: ring got %d, want %d", t, in, t * 1000 + left);

    int v = rank + t, sum = -1;
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(sum == size * t + size * (size - 1) / 2, "turn %d: allreduce %d", t, sum);

    /* The user op was made on the main thread's first turn. */
    int u = -1;
    MPI_Allreduce(&v, &u, 1, MPI_INT, userop, MPI_COMM_WORLD);
    CHECK(u == size * t + size * (size - 1) / 2 + size - 1, "turn %d: user-op allreduce %d", t, u);

    int root = t % size, b = rank == root ? t * 7 + root : -1;
    MPI_Bcast(&b, 1, MPI_INT, root, MPI_COMM_WORLD);
    CHECK(b == t * 7 + root, "turn %d: bcast %d", t, b);

    int all[64];
    int mine = rank * 100 + t;
    MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < size; i++)
        CHECK(all[i] == i * 100 + t, "turn %d: allgather[%d] %d", t, i, all[i]);

    /* The window was made on the main thread: put into the right neighbour's slot. */
    MPI_Win_fence(0, win);
    int val = t * 10 + rank;
    MPI_Put(&val, 1, MPI_INT, right, 1, 1, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(winbuf[1] == t * 10 + left, "turn %d: window got %d", t, winbuf[1]);

    if (t % 5 == 0) {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        int r2;
        MPI_Comm_rank(dup, &r2);
        CHECK(r2 == rank, "turn %d: dup rank %d", t, r2);
        MPI_Barrier(dup);
        MPI_Comm_free(&dup);
    }
}

/* Participant k's rounds, each when the shared turn counter reaches it. */
static void take_turns(int k) {
    for (int r = 0; r < ROUNDS; r++) {
        int t = r * (NT + 1) + k;
        pthread_mutex_lock(&mu);
        while (turn != t)
            pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        one_turn(k, r, t);
        pthread_mutex_lock(&mu);
        turn++;
        pthread_cond_broadcast(&cv);
        pthread_mutex_unlock(&mu);
    }
}

static void *worker(void *arg) {
    take_turns((int)(intptr_t)arg);
    return NULL;
}

static int serialized(void) {
    MPI_Op_create(plus_one, 1, &userop);
    MPI_Win_create(winbuf, sizeof winbuf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    pthread_t th[NT];
    for (int k = 0; k < NT; k++)
        pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k);
    take_turns(NT);
    for (int k = 0; k < NT; k++)
        pthread_join(th[k], NULL);
    CHECK(turn == ROUNDS * (NT + 1), "turns taken %d", turn);
    MPI_Win_free(&win);
    MPI_Op_free(&userop);
    int total = 0;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    return 0;
}

/* funneled: a second thread's call. */
static void *intruder(void *arg) {
    (void)arg;
    int v = 1;
    MPI_Send(&v, 1, MPI_INT, rank, 0, MPI_COMM_SELF);
    printf("rank %d: a second thread's MPI_Send returned under FUNNELED\n", rank);
    fflush(stdout);
    return NULL;
}

/* overlap: the user op, running inside rank 0's MPI_Reduce, lets the main thread call MPI. */
static pthread_mutex_t omu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ocv = PTHREAD_COND_INITIALIZER;
static int inside, released;

static void waiting_op(void *in, void *inout, int *len, MPI_Datatype *dt) {
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
    pthread_mutex_lock(&omu);
    inside = 1;
    pthread_cond_broadcast(&ocv);
    while (!released)
        pthread_cond_wait(&ocv, &omu);
    pthread_mutex_unlock(&omu);
}

static void *reducer(void *arg) {
    (void)arg;
    int v = 1, s = 0;
    MPI_Reduce(&v, &s, 1, MPI_INT, userop, 0, MPI_COMM_WORLD);
    return NULL;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int want = strcmp(mode, "funneled") == 0 ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED;
    int provided = -1;
    MPI_Init_thread(&argc, &argv, want, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int expect = want == MPI_THREAD_FUNNELED ? MPI_THREAD_FUNNELED : MPI_THREAD_SERIALIZED;
    CHECK(provided == expect, "MPI_Init_thread(%d) provided %d, want %d", want, provided, expect);

    if (strcmp(mode, "funneled") == 0) {
        if (errs)
            return 1;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == size - 1) {
            pthread_t th;
            pthread_create(&th, NULL, intruder, NULL);
            pthread_join(th, NULL);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
        return 0;
    }
    if (strcmp(mode, "overlap") == 0) {
        MPI_Op_create(waiting_op, 1, &userop);
        if (rank != 0) {
            int v = 1;
            MPI_Reduce(&v, NULL, 1, MPI_INT, userop, 0, MPI_COMM_WORLD);
            MPI_Finalize();
            return 0;
        }
        pthread_t th;
        pthread_create(&th, NULL, reducer, NULL);
        pthread_mutex_lock(&omu);
        while (!inside)
            pthread_cond_wait(&ocv, &omu);
        pthread_mutex_unlock(&omu);
        /* The reducer thread is inside MPI_Reduce: this call overlaps it. */
        MPI_Barrier(MPI_COMM_SELF);
        printf("rank 0: an overlapping MPI_Barrier returned under SERIALIZED\n");
        fflush(stdout);
        pthread_mutex_lock(&omu);
        released = 1;
        pthread_cond_broadcast(&ocv);
        pthread_mutex_unlock(&omu);
        pthread_join(th, NULL);
        MPI_Finalize();
        return 0;
    }
    serialized();
    MPI_Finalize();
    return 0;
}
