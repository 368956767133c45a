/* Collective calls from two threads on two communicators, entered in opposite orders at even
 * and odd ranks (issue 16, MPI_THREAD_MULTIPLE). Run as `thread_coll_orders [OP...]` (default:
 * every op) at np >= 2. For each op, thread 0 works on one duplicate of MPI_COMM_WORLD and
 * thread 1 on another; at even ranks thread 1 starts 100 ms after thread 0, at odd ranks
 * thread 0 after thread 1. So each thread's first partner is still asleep when the other
 * thread of its rank arrives: a call that waits for its members while it holds the runtime
 * keeps that other thread out, whose partner waits for it in turn, and the job hangs (the
 * launcher's --timeout ends it, naming nothing; the op's "start" line on stderr without its
 * "done" line names it). Prints " No Errors" at rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "thread_coll_orders: " __VA_ARGS__); fprintf(stderr, "\n"); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)
#define OK(call) do { int rc_ = (call); CHECK(rc_ == MPI_SUCCESS, "%s failed (%d) at rank %d", #call, rc_, rank); } while (0)

static int rank, size;
static MPI_Comm comms[2];
static char path[2][256];

typedef void (*op_fn)(MPI_Comm c, int t);

static void op_dup(MPI_Comm c, int t) {
    (void)t;
    MPI_Comm d;
    OK(MPI_Comm_dup(c, &d));
    OK(MPI_Comm_free(&d));
}

static void op_split(MPI_Comm c, int t) {
    (void)t;
    MPI_Comm d;
    OK(MPI_Comm_split(c, rank % 2, -rank, &d));
    OK(MPI_Comm_free(&d));
}

static void op_split_type(MPI_Comm c, int t) {
    (void)t;
    MPI_Comm d;
    OK(MPI_Comm_split_type(c, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &d));
    OK(MPI_Comm_free(&d));
}

static void op_create(MPI_Comm c, int t) {
    (void)t;
    MPI_Group g;
    MPI_Comm d;
    OK(MPI_Comm_group(c, &g));
    OK(MPI_Comm_create(c, g, &d));
    OK(MPI_Comm_free(&d));
    OK(MPI_Group_free(&g));
}

static void op_create_group(MPI_Comm c, int t) {
    MPI_Group g;
    MPI_Comm d;
    OK(MPI_Comm_group(c, &g));
    OK(MPI_Comm_create_group(c, g, 10 + t, &d));
    OK(MPI_Comm_free(&d));
    OK(MPI_Group_free(&g));
}

static void op_intercomm(MPI_Comm c, int t) {
    MPI_Comm half, inter, merged;
    int color = rank % 2;
    OK(MPI_Comm_split(c, color, rank, &half));
    /* The other half's leader: world rank 1 for the evens, 0 for the odds (ranks of c). */
    OK(MPI_Intercomm_create(half, 0, c, color ? 0 : 1, 20 + t, &inter));
    MPI_Comm idup, isplit;
    OK(MPI_Comm_dup(inter, &idup));
    OK(MPI_Comm_split(inter, 0, rank, &isplit));
    int rs;
    MPI_Comm_remote_size(isplit, &rs);
    CHECK(rs == (color ? (size + 1) / 2 : size / 2), "split intercomm remote size %d", rs);
    OK(MPI_Comm_free(&isplit));
    OK(MPI_Comm_free(&idup));
    OK(MPI_Intercomm_merge(inter, color, &merged));
    int msize;
    MPI_Comm_size(merged, &msize);
    CHECK(msize == size, "merged size %d", msize);
    OK(MPI_Comm_free(&merged));
    OK(MPI_Comm_free(&inter));
    OK(MPI_Comm_free(&half));
}

static void op_cart(MPI_Comm c, int t) {
    (void)t;
    int dims[1] = {size}, periods[1] = {1};
    MPI_Comm d;
    OK(MPI_Cart_create(c, 1, dims, periods, 0, &d));
    OK(MPI_Comm_free(&d));
}

static void op_dist_graph(MPI_Comm c, int t) {
    (void)t;
    int src = (rank + size - 1) % size, dst = (rank + 1) % size, w = 1;
    MPI_Comm d;
    OK(MPI_Dist_graph_create_adjacent(c, 1, &src, &w, 1, &dst, &w, MPI_INFO_NULL, 0, &d));
    int v = rank, got = -1;
    OK(MPI_Neighbor_allgather(&v, 1, MPI_INT, &got, 1, MPI_INT, d));
    CHECK(got == src, "neighbor allgather got %d, want %d", got, src);
    OK(MPI_Comm_free(&d));
}

static void op_win(MPI_Comm c, int t) {
    (void)t;
    int buf[4] = {0}, one = rank + 1;
    MPI_Win w;
    OK(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, c, &w));
    OK(MPI_Win_fence(0, w));
    OK(MPI_Put(&one, 1, MPI_INT, (rank + 1) % size, 0, 1, MPI_INT, w));
    OK(MPI_Win_fence(0, w));
    CHECK(buf[0] == (rank + size - 1) % size + 1, "put gave %d", buf[0]);
    OK(MPI_Win_free(&w));
}

/* Post/start/complete/wait with both neighbours: start waits for the neighbours' posts,
 * wait for their completes, calls of the same thread there. */
static void op_pscw(MPI_Comm c, int t) {
    (void)t;
    int buf[2] = {-1, -1}, mine = rank;
    int nb[2] = {(rank + size - 1) % size, (rank + 1) % size};
    int n = nb[0] == nb[1] ? 1 : 2;
    MPI_Group g, ng;
    MPI_Win w;
    OK(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, c, &w));
    OK(MPI_Win_get_group(w, &g));
    OK(MPI_Group_incl(g, n, nb, &ng));
    OK(MPI_Win_post(ng, 0, w));
    OK(MPI_Win_start(ng, 0, w));
    /* Slot 0 at the right neighbour takes this rank; slot 1 at the left one. */
    OK(MPI_Put(&mine, 1, MPI_INT, nb[1], 0, 1, MPI_INT, w));
    OK(MPI_Put(&mine, 1, MPI_INT, nb[0], 1, 1, MPI_INT, w));
    OK(MPI_Win_complete(w));
    OK(MPI_Win_wait(w));
    CHECK(buf[0] == nb[0] && buf[1] == nb[1], "pscw gave %d %d", buf[0], buf[1]);
    OK(MPI_Group_free(&ng));
    OK(MPI_Group_free(&g));
    OK(MPI_Win_free(&w));
}

/* Passive target: every rank writes its slot at rank 0 under an exclusive lock there, then
 * under lock_all with a flush; a lock's holder releases it in its own unlock call. */
static void op_lock(MPI_Comm c, int t) {
    int *buf = calloc(size, sizeof(int)), v = rank + 100 * t;
    MPI_Win w;
    OK(MPI_Win_create(buf, size * sizeof(int), sizeof(int), MPI_INFO_NULL, c, &w));
    OK(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
    OK(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, w));
    OK(MPI_Win_unlock(0, w));
    OK(MPI_Win_lock_all(0, w));
    OK(MPI_Put(&v, 1, MPI_INT, 0, rank, 1, MPI_INT, w));
    OK(MPI_Win_flush_all(w));
    OK(MPI_Win_unlock_all(w));
    OK(MPI_Win_fence(0, w));
    if (rank == 0)
        for (int r = 0; r < size; r++)
            CHECK(buf[r] == r + 100 * t, "lock: slot %d holds %d", r, buf[r]);
    OK(MPI_Win_free(&w));
    free(buf);
}

static void op_win_allocate(MPI_Comm c, int t) {
    (void)t;
    int *base;
    MPI_Win w;
    OK(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, c, &base, &w));
    OK(MPI_Win_free(&w));
    OK(MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, c, &base, &w));
    OK(MPI_Win_free(&w));
    OK(MPI_Win_create_dynamic(MPI_INFO_NULL, c, &w));
    OK(MPI_Win_free(&w));
}

static void op_file(MPI_Comm c, int t) {
    MPI_File f;
    OK(MPI_File_open(c, path[t], MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &f));
    int v = rank;
    OK(MPI_File_write_at_all(f, rank * (MPI_Offset)sizeof(int), &v, 1, MPI_INT, MPI_STATUS_IGNORE));
    OK(MPI_File_close(&f));
}

static void op_colls(MPI_Comm c, int t) {
    int v = rank + t, sum = 0;
    OK(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == size * (size - 1) / 2 + size * t, "allreduce %d", sum);
    OK(MPI_Bcast(&v, 1, MPI_INT, size - 1, c));
    CHECK(v == size - 1 + t, "bcast %d", v);
    OK(MPI_Barrier(c));
    MPI_Request r;
    MPI_Comm d;
    OK(MPI_Comm_idup(c, &d, &r));
    OK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    OK(MPI_Comm_free(&d));
}

static const struct { const char *name; op_fn fn; } ops[] = {
    {"dup", op_dup}, {"split", op_split}, {"split_type", op_split_type}, {"create", op_create},
    {"create_group", op_create_group}, {"intercomm", op_intercomm}, {"cart", op_cart},
    {"dist_graph", op_dist_graph}, {"win", op_win}, {"pscw", op_pscw}, {"lock", op_lock}, {"win_allocate", op_win_allocate},
    {"file", op_file}, {"colls", op_colls},
};
#define NOPS (int)(sizeof ops / sizeof ops[0])

static op_fn current;

static void *worker(void *arg) {
    int t = (int)(size_t)arg;
    /* The thread whose partner goes first at the other parity waits. */
    if ((rank % 2 == 0) == (t == 1))
        usleep(100 * 1000);
    current(comms[t], t);
    return NULL;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size >= 2, "needs np >= 2");
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    for (int t = 0; t < 2; t++) {
        OK(MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]));
        snprintf(path[t], sizeof path[t], "%s/thread_coll_orders.%d.%d", dir, (int)getppid(), t);
    }
    for (int i = 0; i < NOPS; i++) {
        int wanted = argc < 2;
        for (int a = 1; a < argc; a++)
            wanted |= strcmp(argv[a], ops[i].name) == 0;
        if (!wanted)
            continue;
        if (rank == 0)
            fprintf(stderr, "thread_coll_orders: %s start\n", ops[i].name);
        current = ops[i].fn;
        pthread_t th[2];
        for (int t = 0; t < 2; t++)
            pthread_create(&th[t], NULL, worker, (void *)(size_t)t);
        for (int t = 0; t < 2; t++)
            pthread_join(th[t], NULL);
        OK(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 0)
            fprintf(stderr, "thread_coll_orders: %s done\n", ops[i].name);
    }
    for (int t = 0; t < 2; t++)
        OK(MPI_Comm_free(&comms[t]));
    if (rank == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
