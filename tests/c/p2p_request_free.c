/* MPI_Request_free on active requests: a freed receive still receives (checked after the
 * sender's acknowledgement), and a job whose ranks free their last receives and sends, then go
 * straight to MPI_Finalize while a peer still waits on them, finishes (MPICH's pt2pt/rqfree
 * pattern: the freed receive's rendezvous must be progressed inside MPI_Finalize). */
#include "p2p_common.h"

#define BIG (1 << 20)

static void fill(char *b, int n, int seed) {
    for (int i = 0; i < n; i++) b[i] = (char)(seed * 31 + i * 7);
}

static int same(const char *b, int n, int seed) {
    for (int i = 0; i < n; i++)
        if (b[i] != (char)(seed * 31 + i * 7)) return 0;
    return 1;
}

int main(int argc, char **argv) {
    int rank, size, ack, total;
    MPI_Request req;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    const int sizes[] = {100, 40000, BIG};
    /* Never freed: a freed request may still be using its buffer when MPI_Finalize starts. */
    char *in = malloc(BIG), *out = malloc(BIG), *last_in = malloc(3 * BIG),
         *last_out = malloc(3 * BIG);

    /* A freed receive completes; the sender's acknowledgement says when. */
    for (int s = 0; s < 3; s++) {
        memset(in, 0, sizes[s]);
        fill(out, sizes[s], rank + s);
        MPI_Irecv(in, sizes[s], MPI_CHAR, from, 1, MPI_COMM_WORLD, &req);
        MPI_Request_free(&req);
        CHECK(req == MPI_REQUEST_NULL, "rank %d: freed request not nulled", rank);
        MPI_Send(out, sizes[s], MPI_CHAR, to, 1, MPI_COMM_WORLD);
        MPI_Sendrecv(&rank, 1, MPI_INT, to, 2, &ack, 1, MPI_INT, from, 2, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        CHECK(same(in, sizes[s], from + s), "rank %d: freed receive of %d bytes wrong", rank,
              sizes[s]);
    }

    /* A freed send completes: the receiver checks it. */
    fill(out, BIG, rank + 7);
    MPI_Isend(out, BIG, MPI_CHAR, to, 3, MPI_COMM_WORLD, &req);
    MPI_Request_free(&req);
    MPI_Recv(in, BIG, MPI_CHAR, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(same(in, BIG, from + 7), "rank %d: freed send wrong", rank);
    MPI_Barrier(MPI_COMM_WORLD); /* the freed send's buffer is reused below */

    MPI_Reduce(&errors, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
        fflush(stdout);
    }

    /* The end: freed receives and sends left to MPI_Finalize while peers wait on them. */
    for (int s = 0; s < 3; s++) {
        MPI_Irecv(last_in + s * BIG, sizes[s], MPI_CHAR, from, 10 + s, MPI_COMM_WORLD, &req);
        MPI_Request_free(&req);
    }
    MPI_Isend(last_out, BIG, MPI_CHAR, to, 10 + 2, MPI_COMM_WORLD, &req);
    MPI_Request_free(&req);
    MPI_Send(last_out + BIG, 40000, MPI_CHAR, to, 11, MPI_COMM_WORLD);
    MPI_Send(last_out + 2 * BIG, 100, MPI_CHAR, to, 10, MPI_COMM_WORLD);
    MPI_Finalize();
    return total ? 1 : 0;
}
