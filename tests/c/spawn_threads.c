/* MPI_Comm_spawn from several threads at once under MPI_THREAD_MULTIPLE (issue 16; MPICH's
 * threads/spawn/th_taskmanager pattern). Run as `spawn_threads [ROUNDS]` at any np: each rank dups
 * MPI_COMM_WORLD once per thread; in every round NT threads each spawn one child over their own
 * communicator (the root differs per thread) while another thread runs allreduces on a fourth
 * communicator; every parent rank sends its child (rank, thread, round), the child checks them
 * and answers each with a checksum, then both sides disconnect. A spawn that held the runtime
 * while it waited deadlocked: the other ranks' threads enter their spawns in another order.
 * Prints " No Errors" at rank 0. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NT 3
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "spawn_threads: " __VA_ARGS__); fprintf(stderr, "\n"); MPI_Abort(MPI_COMM_WORLD, 1); } } while (0)

static MPI_Comm comms[NT + 1];
static int rank, size, round_no;
static const char *prog;

static int answer(int r, int t, int round) { return r * 1000 + t * 10 + round; }

static void *spawner(void *arg) {
    int t = (int)(size_t)arg;
    char ts[16], rs[16];
    snprintf(ts, sizeof ts, "%d", t);
    snprintf(rs, sizeof rs, "%d", round_no);
    char *argv[] = {"child", ts, rs, NULL};
    MPI_Comm inter;
    int code = -1;
    int rc = MPI_Comm_spawn(prog, argv, 1, MPI_INFO_NULL, t % size, comms[t], &inter, &code);
    CHECK(rc == MPI_SUCCESS && code == MPI_SUCCESS, "rank %d thread %d: spawn failed (%d, %d)", rank, t, rc, code);
    int rsize;
    MPI_Comm_remote_size(inter, &rsize);
    CHECK(rsize == 1, "rank %d thread %d: %d children", rank, t, rsize);
    int msg[3] = {rank, t, round_no}, reply = -1;
    MPI_Send(msg, 3, MPI_INT, 0, 7, inter);
    MPI_Recv(&reply, 1, MPI_INT, 0, 8, inter, MPI_STATUS_IGNORE);
    CHECK(reply == answer(rank, t, round_no), "rank %d thread %d: reply %d", rank, t, reply);
    rc = MPI_Comm_disconnect(&inter);
    CHECK(rc == MPI_SUCCESS && inter == MPI_COMM_NULL, "rank %d thread %d: disconnect", rank, t);
    return NULL;
}

/* Collectives on a communicator of their own while the spawns go on. */
static void *reducer(void *arg) {
    (void)arg;
    for (int i = 0; i < 50; i++) {
        int v = rank + i, sum = 0;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, comms[NT]);
        CHECK(sum == size * (size - 1) / 2 + size * i, "rank %d: allreduce %d gave %d", rank, i, sum);
    }
    return NULL;
}

static int child(int argc, char **argv, MPI_Comm parent) {
    CHECK(argc == 4, "child: argc %d", argc);
    int t = atoi(argv[2]), round = atoi(argv[3]), psize;
    MPI_Comm_remote_size(parent, &psize);
    for (int r = 0; r < psize; r++) {
        int msg[3];
        MPI_Recv(msg, 3, MPI_INT, r, 7, parent, MPI_STATUS_IGNORE);
        CHECK(msg[0] == r && msg[1] == t && msg[2] == round, "child: from %d got (%d %d %d), want (%d %d %d)",
              r, msg[0], msg[1], msg[2], r, t, round);
        int reply = answer(r, t, round);
        MPI_Send(&reply, 1, MPI_INT, r, 8, parent);
    }
    MPI_Comm_disconnect(&parent);
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv) {
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return child(argc, argv, parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    prog = argv[0];
    int rounds = argc >= 2 ? atoi(argv[1]) : 4;
    for (int t = 0; t <= NT; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    for (round_no = 0; round_no < rounds; round_no++) {
        pthread_t th[NT + 1];
        /* Odd ranks start their threads in the other order. */
        for (int i = 0; i < NT; i++) {
            int t = rank % 2 ? NT - 1 - i : i;
            pthread_create(&th[t], NULL, spawner, (void *)(size_t)t);
        }
        pthread_create(&th[NT], NULL, reducer, NULL);
        for (int t = 0; t <= NT; t++)
            pthread_join(th[t], NULL);
    }
    for (int t = 0; t <= NT; t++)
        MPI_Comm_free(&comms[t]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
