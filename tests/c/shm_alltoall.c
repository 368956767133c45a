/* Every rank exchanges checked messages with every other (Isend/Irecv/Waitall), a Barrier, and a
 * hand-rolled allreduce (ring of Sendrecv); rank 0 reports the real size of the shared segment it
 * inherited (fstat of RMPI_SM_FD) so the harness can compare it with `mpirun --shm-report`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define LEN 3000 /* ints: above the eager fragment and the inline sizes */

int main(int argc, char **argv) {
    int rank, size, errs = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int len = argc > 1 ? atoi(argv[1]) : LEN;

    int *out = malloc(sizeof(int) * (size_t)len * size);
    int *in = malloc(sizeof(int) * (size_t)len * size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * size);
    for (int round = 0; round < 3; round++) {
        int nr = 0;
        int l = round == 0 ? 1 : round == 1 ? 8 : len; /* inline, small, multi-fragment */
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            for (int i = 0; i < l; i++) out[p * len + i] = rank * 1000003 + p * 7919 + i + round;
            MPI_Irecv(in + p * len, l, MPI_INT, p, round, MPI_COMM_WORLD, &reqs[nr++]);
        }
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            MPI_Isend(out + p * len, l, MPI_INT, p, round, MPI_COMM_WORLD, &reqs[nr++]);
        }
        MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
        for (int p = 0; p < size; p++) {
            if (p == rank) continue;
            for (int i = 0; i < l; i++) {
                if (in[p * len + i] != p * 1000003 + rank * 7919 + i + round) {
                    if (errs++ < 5)
                        printf("rank %d: round %d from %d [%d] = %d\n", rank, round, p, i,
                               in[p * len + i]);
                }
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    /* allreduce(sum of ranks) by a ring */
    long acc = rank, pass = rank, got;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int s = 1; s < size; s++) {
        MPI_Sendrecv(&pass, 1, MPI_LONG, right, 99, &got, 1, MPI_LONG, left, 99, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        acc += got;
        pass = got;
    }
    if (acc != (long)size * (size - 1) / 2) {
        printf("rank %d: allreduce %ld\n", rank, acc);
        errs++;
    }
    int all_errs = errs, e;
    /* gather error counts at 0 */
    if (rank == 0) {
        for (int p = 1; p < size; p++) {
            MPI_Recv(&e, 1, MPI_INT, p, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            all_errs += e;
        }
        const char *fd = getenv("RMPI_SM_FD");
        struct stat st;
        if (fd && fstat(atoi(fd), &st) == 0)
            printf("segment_size %lld\n", (long long)st.st_size);
        if (all_errs == 0) printf(" No Errors\n");
    } else {
        MPI_Send(&errs, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    free(out);
    free(in);
    free(reqs);
    MPI_Finalize();
    return 0;
}
