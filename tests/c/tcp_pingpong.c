/* Every byte checked at every size from 0 B to 16 MiB: a pingpong between rank 0 and the last
 * rank, then a ring exchange (MPI_Sendrecv) among all ranks. Prints "tcp_pingpong: OK". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX (16 << 20)

static unsigned char val(int from, int size, long i) {
    return (unsigned char)(i * 131 + from * 7 + size * 13 + (i >> 8));
}

static void fill(unsigned char *b, int from, int size) {
    for (long i = 0; i < size; i++) b[i] = val(from, size, i);
}

static int check(const unsigned char *b, int from, int size, const char *what) {
    for (long i = 0; i < size; i++) {
        if (b[i] != val(from, size, i)) {
            fprintf(stderr, "%s: size %d from %d: byte %ld is %d, expected %d\n", what, size, from,
                    i, b[i], val(from, size, i));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv) {
    int rank, n, bad = 0, count = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    unsigned char *s = malloc(MAX), *r = malloc(MAX);
    int last = n - 1;
    for (int size = 0; size <= MAX; size = size < 4 ? size + 1 : (size * 2 + (size & 1 ? 0 : 1))) {
        int sz = size > MAX ? MAX : size;
        MPI_Status st;
        int got;
        if (rank == 0) {
            fill(s, 0, sz);
            MPI_Send(s, sz, MPI_BYTE, last, 1, MPI_COMM_WORLD);
            memset(r, 0, sz);
            MPI_Recv(r, sz, MPI_BYTE, last, 2, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            bad |= got != sz || check(r, last, sz, "pong");
        } else if (rank == last) {
            memset(r, 0, sz);
            MPI_Recv(r, sz, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &st);
            MPI_Get_count(&st, MPI_BYTE, &got);
            bad |= got != sz || check(r, 0, sz, "ping");
            fill(s, last, sz);
            MPI_Send(s, sz, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
        }
        int to = (rank + 1) % n, from = (rank + n - 1) % n;
        fill(s, rank, sz);
        memset(r, 0, sz);
        MPI_Sendrecv(s, sz, MPI_BYTE, to, 3, r, sz, MPI_BYTE, from, 3, MPI_COMM_WORLD, &st);
        bad |= check(r, from, sz, "ring");
        count++;
        if (sz == MAX) break;
    }
    int any;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    if (rank == 0) printf(any ? "tcp_pingpong: FAILED\n" : "tcp_pingpong: OK (%d sizes)\n", count);
    free(s);
    free(r);
    MPI_Finalize();
    return any;
}
