/* Small MPI_Isends that complete at once share one completed request (as MPICH's lightweight
 * request): every completion, query, free and cancel call must treat each such handle as its
 * own completed send, alone and mixed with pending receives in arrays, and the message must
 * arrive whole, also when the transport held it back to publish with the next ones (btl sm's
 * coalescing). Ranks pair up (0-1, 2-3, ...); an odd last rank only checks its own calls. */
#include "p2p_common.h"

#define N 8

static void send_small(int to, int tag, int *val, MPI_Request *r) {
    MPI_Isend(val, 1, MPI_INT, to, tag, MPI_COMM_WORLD, r);
}

static void expect(int from, int tag, int want, const char *what) {
    int got = -1;
    MPI_Recv(&got, 1, MPI_INT, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(got == want, "%s: got %d, want %d", what, got, want);
}

int main(int argc, char **argv) {
    int rank, size, flag, idx, outcount, idxs[2 * N], vals[2 * N], in[2 * N];
    MPI_Request r, reqs[2 * N];
    MPI_Status st, sts[2 * N];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int peer = rank ^ 1;
    if (peer >= size) peer = MPI_PROC_NULL;
    for (int i = 0; i < 2 * N; i++) vals[i] = rank * 1000 + i;

    /* Get_status leaves it; a second Get_status still says complete; Test retires it. */
    send_small(peer, 1, &vals[0], &r);
    CHECK(r != MPI_REQUEST_NULL, "Isend gave MPI_REQUEST_NULL");
    CHECK(MPI_Request_toint(r) >= 0, "toint of a request is negative");
    MPI_Request r2 = MPI_Request_fromint(MPI_Request_toint(r));
    CHECK(r2 == r, "fromint(toint(r)) != r");
    for (int k = 0; k < 2; k++) {
        flag = 0;
        CHECK(MPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && flag,
              "get_status of a completed send: flag %d", flag);
        CHECK(r != MPI_REQUEST_NULL, "get_status freed the request");
    }
    flag = 0;
    /* (MPI_Test sets no MPI_ERROR: the single-completion calls leave that field alone.) */
    CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS && flag && r == MPI_REQUEST_NULL,
          "Test of a completed send: flag %d", flag);
    flag = 1;
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "a completed send reads as cancelled");

    /* Cancel does nothing to a completed send; Wait then retires it, not cancelled. */
    send_small(peer, 2, &vals[1], &r);
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS, "Cancel of a completed send failed");
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "Wait after Cancel");
    flag = 1;
    MPI_Test_cancelled(&st, &flag);
    CHECK(!flag, "a completed send was cancelled");

    /* Free at once; the message still arrives. A second request stays usable after it. */
    send_small(peer, 3, &vals[2], &r);
    send_small(peer, 4, &vals[3], &r2);
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "Request_free");
    CHECK(MPI_Wait(&r2, MPI_STATUS_IGNORE) == MPI_SUCCESS && r2 == MPI_REQUEST_NULL,
          "Wait on a send after another one's free");

    /* Not a persistent or generalized request: MPI_Start and Grequest_complete refuse it. */
    send_small(peer, 5, &vals[4], &r);
    r2 = r;
    CHECK(MPI_Start(&r2) != MPI_SUCCESS, "MPI_Start of a completed send succeeded");
    CHECK(MPI_Grequest_complete(r) != MPI_SUCCESS, "Grequest_complete of a send succeeded");
    CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "Wait after refused calls");

    if (peer != MPI_PROC_NULL) {
        expect(peer, 1, peer * 1000 + 0, "get_status/test send");
        expect(peer, 2, peer * 1000 + 1, "cancelled send");
        expect(peer, 3, peer * 1000 + 2, "freed send");
        expect(peer, 4, peer * 1000 + 3, "send after free");
        expect(peer, 5, peer * 1000 + 4, "refused-call send");
    }

    /* Arrays: sends (complete at once) interleaved with receives that complete later. */
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < N; i++) {
            in[i] = -1;
            MPI_Irecv(&in[i], 1, MPI_INT, peer, 100 + i, MPI_COMM_WORLD, &reqs[2 * i]);
            send_small(peer, 100 + i, &vals[N + i], &reqs[2 * i + 1]);
        }
        int done = 0;
        switch (round) {
        case 0:
            CHECK(MPI_Waitall(2 * N, reqs, sts) == MPI_SUCCESS, "Waitall");
            done = 2 * N;
            break;
        case 1:
            while (done < 2 * N) {
                CHECK(MPI_Waitany(2 * N, reqs, &idx, &st) == MPI_SUCCESS, "Waitany");
                CHECK(idx != MPI_UNDEFINED && reqs[idx] == MPI_REQUEST_NULL, "Waitany index %d", idx);
                done++;
            }
            break;
        case 2:
            while (done < 2 * N) {
                CHECK(MPI_Waitsome(2 * N, reqs, &outcount, idxs, sts) == MPI_SUCCESS, "Waitsome");
                CHECK(outcount > 0 && outcount != MPI_UNDEFINED, "Waitsome outcount %d", outcount);
                done += outcount;
            }
            break;
        default:
            while (done < 2 * N) {
                flag = 0;
                CHECK(MPI_Testsome(2 * N, reqs, &outcount, idxs, sts) == MPI_SUCCESS, "Testsome");
                if (outcount != MPI_UNDEFINED) done += outcount;
                CHECK(MPI_Testall(2 * N, reqs, &flag, sts) == MPI_SUCCESS, "Testall");
                if (flag) done = 2 * N;
            }
        }
        for (int i = 0; i < 2 * N; i++)
            CHECK(reqs[i] == MPI_REQUEST_NULL, "round %d: request %d not retired", round, i);
        if (peer != MPI_PROC_NULL)
            for (int i = 0; i < N; i++)
                CHECK(in[i] == peer * 1000 + N + i, "round %d: message %d: %d", round, i, in[i]);
    }

    /* A small MPI_Isend that the transport may hold back to publish with the next ones must
     * still go when the sender next waits or polls for anything: a blocking receive of the
     * answer, or MPI_Iprobe in a loop. */
    if (peer != MPI_PROC_NULL) {
        int x = rank, y = -1;
        for (int round = 0; round < 2; round++) {
            if (rank < peer) {
                MPI_Isend(&x, 1, MPI_INT, peer, 400, MPI_COMM_WORLD, &r);
                if (round == 0) {
                    MPI_Recv(&y, 1, MPI_INT, peer, 401, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    flag = 0;
                    while (!flag) MPI_Iprobe(peer, 401, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
                    MPI_Recv(&y, 1, MPI_INT, peer, 401, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                }
                MPI_Wait(&r, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&y, 1, MPI_INT, peer, 400, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(&x, 1, MPI_INT, peer, 401, MPI_COMM_WORLD);
            }
            CHECK(y == peer, "round %d: answer %d from %d", round, y, peer);
        }
    }

    /* Many outstanding at once, all retired by one Waitall after the receiver's answer. */
    if (peer != MPI_PROC_NULL) {
        MPI_Request many[256];
        int big_in[256], ack = 0;
        for (int i = 0; i < 256; i++) {
            big_in[i] = -1;
            MPI_Irecv(&big_in[i], 1, MPI_INT, peer, 300, MPI_COMM_WORLD, &many[i]);
        }
        MPI_Request sends[256];
        for (int i = 0; i < 256; i++) MPI_Isend(&vals[i % (2 * N)], 1, MPI_INT, peer, 300, MPI_COMM_WORLD, &sends[i]);
        CHECK(MPI_Waitall(256, many, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall receives");
        CHECK(MPI_Waitall(256, sends, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "Waitall sends");
        for (int i = 0; i < 256; i++)
            CHECK(big_in[i] == peer * 1000 + i % (2 * N), "in-order message %d: %d", i, big_in[i]);
        MPI_Sendrecv(&ack, 1, MPI_INT, peer, 301, &ack, 1, MPI_INT, peer, 301, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
    }
    return finish();
}
