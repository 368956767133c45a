/* Partitioned communication (MPI-4): each rank sends to the next on a ring and receives from
 * the previous one, the two sides partitioned differently (sender 6 x 10 ints, receiver
 * 4 x 15, then the other way round), partitions marked ready in reverse order, in ranges and
 * lists, receivers polling MPI_Parrived; several runs with new data each; MPI_PROC_NULL
 * peers; a request freed without being started. */
#include "coll_util.h"

#define TOT 60
#define RUNS 5

static void ring(int sparts, int rparts, int tag) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int sbuf[TOT] = {0}, rbuf[TOT];
    MPI_Request sreq, rreq;
    MPI_Psend_init(sbuf, sparts, TOT / sparts, MPI_INT, next, tag, MPI_COMM_WORLD,
                   MPI_INFO_NULL, &sreq);
    MPI_Precv_init_c(rbuf, rparts, (MPI_Count)(TOT / rparts), MPI_INT, prev, tag,
                     MPI_COMM_WORLD, MPI_INFO_NULL, &rreq);
    for (int run = 0; run < RUNS; run++) {
        for (int i = 0; i < TOT; i++) {
            sbuf[i] = 100000 * run + 1000 * rank + i;
            rbuf[i] = -1;
        }
        MPI_Request both[2] = {rreq, sreq};
        MPI_Startall(2, both);
        rreq = both[0];
        sreq = both[1];
        if (run % 3 == 0) {
            for (int j = sparts - 1; j >= 0; j--)
                MPI_Pready(j, sreq);
        } else if (run % 3 == 1) {
            MPI_Pready_range(0, sparts / 2 - 1, sreq);
            MPI_Pready_range(sparts / 2, sparts - 1, sreq);
        } else {
            int list[TOT];
            for (int j = 0; j < sparts; j++)
                list[j] = sparts - 1 - j;
            MPI_Pready_list(sparts, list, sreq);
        }
        /* Poll every receive partition until it arrives, then check it at once. */
        int left = rparts;
        int seen[TOT] = {0};
        while (left > 0) {
            for (int k = 0; k < rparts; k++) {
                int flag = 0;
                if (seen[k])
                    continue;
                MPI_Parrived(rreq, k, &flag);
                if (flag) {
                    seen[k] = 1;
                    left--;
                    int per = TOT / rparts;
                    for (int i = k * per; i < (k + 1) * per; i++)
                        CHECK(rbuf[i] == 100000 * run + 1000 * prev + i,
                              "run %d partition %d: rbuf[%d] = %d", run, k, i, rbuf[i]);
                }
            }
        }
        MPI_Status st;
        MPI_Wait(&rreq, &st);
        MPI_Wait(&sreq, MPI_STATUS_IGNORE);
        CHECK(sreq != MPI_REQUEST_NULL && rreq != MPI_REQUEST_NULL, "persistent handles kept");
        int flag = 0;
        MPI_Parrived(rreq, 0, &flag);
        CHECK(flag, "Parrived on an inactive request is true");
    }
    MPI_Request_free(&sreq);
    MPI_Request_free(&rreq);
}

/* A strided datatype on one side, ints on the other, partitions splitting its elements:
 * every even int of a 48-int buffer (vector of 2 ints stride 2, resized to 4 ints). */
static void strided(int strided_sends) {
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int wide[48], packed[24];
    MPI_Datatype vec, t;
    MPI_Type_vector(2, 1, 2, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, 4 * sizeof(int), &t);
    MPI_Type_commit(&t);
    MPI_Type_free(&vec);
    for (int run = 0; run < 3; run++) {
        MPI_Request s, r;
        for (int i = 0; i < 48; i++)
            wide[i] = strided_sends ? (i % 2 ? -7 : 1000 * rank + i / 2 + run) : -1;
        for (int i = 0; i < 24; i++)
            packed[i] = strided_sends ? -1 : 1000 * rank + i + run;
        if (strided_sends) {
            MPI_Psend_init(wide, 4, 3, t, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
            MPI_Precv_init(packed, 8, 3, MPI_INT, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        } else {
            MPI_Psend_init(packed, 6, 4, MPI_INT, next, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
            MPI_Precv_init(wide, 4, 3, t, prev, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
        }
        MPI_Start(&r);
        MPI_Start(&s);
        MPI_Pready_range(0, strided_sends ? 3 : 5, s);
        MPI_Wait(&s, MPI_STATUS_IGNORE);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int i = 0; i < 48; i++) {
            int want = strided_sends ? (i < 24 ? 1000 * prev + i + run : 0)
                                     : (i % 2 ? -1 : 1000 * prev + i / 2 + run);
            if (strided_sends && i < 24)
                CHECK(packed[i] == want, "strided send run %d: [%d] = %d, want %d", run, i,
                      packed[i], want);
            if (!strided_sends)
                CHECK(wide[i] == want, "strided recv run %d: [%d] = %d, want %d", run, i,
                      wide[i], want);
        }
        MPI_Request_free(&s);
        MPI_Request_free(&r);
    }
    MPI_Type_free(&t);
}

/* MPI_Pready is local: the sender readies everything before the receiver has even called
 * MPI_Precv_init, and then sends a rendezvous-sized message the receiver takes first. */
static void pready_before_recv_init(void) {
    if (size < 2 || rank > 1) {
        return;
    }
    int n = 1 << 18, data[8];
    int *big = calloc(n, sizeof(int));
    MPI_Request req;
    if (rank == 0) {
        for (int i = 0; i < 8; i++)
            data[i] = 500 + i;
        MPI_Psend_init(data, 4, 2, MPI_INT, 1, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Pready_range(0, 3, req);
        big[n - 1] = 17;
        MPI_Send(big, n, MPI_INT, 1, 11, MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(big, n, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(big[n - 1] == 17, "large message");
        memset(data, 0, sizeof data);
        MPI_Precv_init(data, 2, 4, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        for (int i = 0; i < 8; i++)
            CHECK(data[i] == 500 + i, "early pready: data[%d] = %d", i, data[i]);
    }
    MPI_Request_free(&req);
    free(big);
}

static void proc_null(void) {
    int buf[4] = {1, 2, 3, 4};
    MPI_Request s, r;
    MPI_Psend_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    MPI_Precv_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    MPI_Start(&s);
    MPI_Start(&r);
    MPI_Pready_range(0, 1, s);
    MPI_Wait(&s, MPI_STATUS_IGNORE);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(buf[3] == 4, "PROC_NULL receive wrote");
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

static void never_started(void) {
    int a = rank;
    MPI_Request req[2];
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    MPI_Psend_init(&a, 1, 1, MPI_INT, next, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req[0]);
    MPI_Precv_init(&a, 1, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req[1]);
    MPI_Request_free(&req[0]);
    MPI_Request_free(&req[1]);
}

static void errors(void) {
    int a;
    MPI_Request req;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Precv_init(&a, 1, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD,
                            MPI_INFO_NULL, &req), cls;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_RANK, "ANY_SOURCE refused: class %d", cls);
    rc = MPI_Psend_init(&a, 0, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ARG, "0 partitions refused: class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    ring(6, 4, 1);
    ring(4, 6, 2);
    ring(1, 60, 3);
    ring(60, 1, 4);
    strided(1);
    strided(0);
    pready_before_recv_init();
    proc_null();
    never_started();
    errors();
    return finish();
}
