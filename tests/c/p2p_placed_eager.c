/* Eager messages of 16 KiB up to the eager limit, which btl tcp reads from the socket straight
 * into a receive that matches when their header arrives (and sm delivers as usual). Every
 * receive kind such a message can meet, every byte checked, np 2 (rank 0 sends, rank 1
 * receives; more ranks idle):
 *   1. blocking MPI_Recv (the latency path), contiguous, each size;
 *   2. pre-posted MPI_Irecv windows, contiguous, distinct buffers;
 *   3. a strided (vector) receive: placed through a scratch buffer, then scattered;
 *   4. a receive too small: MPI_ERR_TRUNCATE, the bytes that fit delivered, nothing else
 *      overwritten (a guard after the buffer), blocking and non-blocking;
 *   5. unexpected: sent before the receive is posted (the usual buffered path);
 *   6. MPI_ANY_SOURCE / MPI_ANY_TAG receives. */
#include "p2p_common.h"
#include <unistd.h>

static unsigned char pat(int seed, size_t i) { return (unsigned char)(seed * 131 + i * 7 + (i >> 9)); }

static void fill(unsigned char *b, size_t n, int seed) {
    for (size_t i = 0; i < n; i++) b[i] = pat(seed, i);
}

static long bad(const unsigned char *b, size_t n, int seed) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != pat(seed, i)) return (long)i;
    return -1;
}

static const size_t sizes[] = {16384, 20000, 32768, 40001, 65000, 65536 - 20};
#define NS (sizeof sizes / sizeof sizes[0])
#define BIG 65536
#define WIN 8

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char *buf = malloc((size_t)BIG * WIN + 64);
    if (rank == 0) {
        for (size_t k = 0; k < NS; k++) { /* 1 */
            fill(buf, sizes[k], (int)k);
            MPI_Send(buf, (int)sizes[k], MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        }
        for (size_t k = 0; k < NS; k++) { /* 2 */
            MPI_Request r[WIN];
            for (int w = 0; w < WIN; w++) {
                fill(buf + (size_t)w * BIG, sizes[k], (int)k + w);
                MPI_Isend(buf + (size_t)w * BIG, (int)sizes[k], MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r[w]);
            }
            MPI_Waitall(WIN, r, MPI_STATUSES_IGNORE);
        }
        MPI_Barrier(MPI_COMM_WORLD); /* 3: the receive is posted first */
        fill(buf, 32768, 3);
        MPI_Send(buf, 32768, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
        for (int blocking = 0; blocking < 2; blocking++) { /* 4 */
            MPI_Barrier(MPI_COMM_WORLD);
            fill(buf, 40000, 4 + blocking);
            MPI_Send(buf, 40000, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
        }
        fill(buf, 50000, 5); /* 5 */
        MPI_Send(buf, 50000, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
        MPI_Barrier(MPI_COMM_WORLD);
        fill(buf, 30000, 6); /* 6 */
        MPI_Send(buf, 30000, MPI_BYTE, 1, 66, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        int count;
        for (size_t k = 0; k < NS; k++) { /* 1 */
            memset(buf, 0, BIG);
            MPI_Recv(buf, BIG, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            long at = bad(buf, sizes[k], (int)k);
            CHECK(count == (int)sizes[k] && at < 0, "1. blocking %zu: count %d, first bad byte %ld",
                  sizes[k], count, at);
        }
        for (size_t k = 0; k < NS; k++) { /* 2 */
            MPI_Request r[WIN];
            memset(buf, 0, (size_t)BIG * WIN);
            for (int w = 0; w < WIN; w++)
                MPI_Irecv(buf + (size_t)w * BIG, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[w]);
            MPI_Status sts[WIN];
            MPI_Waitall(WIN, r, sts);
            for (int w = 0; w < WIN; w++) {
                MPI_Get_count(&sts[w], MPI_BYTE, &count);
                long at = bad(buf + (size_t)w * BIG, sizes[k], (int)k + w);
                CHECK(count == (int)sizes[k] && at < 0, "2. window %zu #%d: count %d, first bad byte %ld",
                      sizes[k], w, count, at);
            }
        }
        { /* 3: 32768 bytes into 4096 blocks of 8 with a stride of 16 */
            MPI_Datatype v;
            MPI_Type_vector(4096, 8, 16, MPI_BYTE, &v);
            MPI_Type_commit(&v);
            memset(buf, 0xee, 65536);
            MPI_Request r;
            MPI_Irecv(buf, 1, v, 0, 3, MPI_COMM_WORLD, &r);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Wait(&r, &st);
            int ok = 1;
            for (size_t i = 0; i < 32768 && ok; i++) ok = buf[(i / 8) * 16 + i % 8] == pat(3, i);
            for (size_t b = 0; b < 4096 && ok; b++)
                for (size_t j = 8; j < 16; j++) ok = ok && buf[b * 16 + j] == 0xee;
            CHECK(ok, "3. strided receive: data or gaps wrong");
            MPI_Type_free(&v);
        }
        for (int blocking = 0; blocking < 2; blocking++) { /* 4: 40000 bytes into 20000 */
            memset(buf, 0, 20064);
            MPI_Request r;
            int rc;
            if (blocking) {
                MPI_Barrier(MPI_COMM_WORLD);
                rc = MPI_Recv(buf, 20000, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &st);
            } else {
                MPI_Irecv(buf, 20000, MPI_BYTE, 0, 4, MPI_COMM_WORLD, &r);
                MPI_Barrier(MPI_COMM_WORLD);
                rc = MPI_Wait(&r, &st);
            }
            int cls = MPI_SUCCESS;
            if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
            long at = bad(buf, 20000, 4 + blocking);
            int guard = 1;
            for (int i = 20000; i < 20064; i++) guard = guard && buf[i] == 0;
            CHECK(cls == MPI_ERR_TRUNCATE && at < 0 && guard,
                  "4. truncated (%s): class %d, first bad byte %ld, guard %s",
                  blocking ? "blocking" : "non-blocking", cls, at, guard ? "intact" : "overwritten");
        }
        { /* 5: arrives before the receive */
            usleep(200000);
            memset(buf, 0, BIG);
            MPI_Recv(buf, BIG, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            long at = bad(buf, 50000, 5);
            CHECK(count == 50000 && at < 0, "5. unexpected: count %d, first bad byte %ld", count, at);
            MPI_Barrier(MPI_COMM_WORLD);
        }
        { /* 6 */
            memset(buf, 0, BIG);
            MPI_Recv(buf, BIG, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            long at = bad(buf, 30000, 6);
            CHECK(count == 30000 && at < 0 && st.MPI_SOURCE == 0 && st.MPI_TAG == 66,
                  "6. wildcard: count %d source %d tag %d, first bad byte %ld", count, st.MPI_SOURCE,
                  st.MPI_TAG, at);
        }
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
    }
    free(buf);
    return finish();
}
