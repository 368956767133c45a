/*
 * hello.c -- every rank reports its rank, the world size and its host.
 *
 * Prints "Hello from rank R of N on HOST", one line per rank.  Also checks
 * that MPI_Initialized / MPI_Finalized report the library state correctly
 * before MPI_Init, between MPI_Init and MPI_Finalize, and after MPI_Finalize.
 *
 * Build:  mpicc -O2 -o hello hello.c      Run:  mpirun -np 4 ./hello
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        int check_rc_ = (call);                                              \
        if (check_rc_ != MPI_SUCCESS) {                                      \
            fprintf(stderr, "hello: %s failed with error %d (%s:%d)\n",      \
                    #call, check_rc_, __FILE__, __LINE__);                   \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

int main(int argc, char **argv)
{
    int rank, size, len, flag;
    char name[MPI_MAX_PROCESSOR_NAME];

    CHECK(MPI_Initialized(&flag));
    if (flag) {
        fprintf(stderr, "hello: MPI_Initialized says true before MPI_Init\n");
        return 1;
    }
    CHECK(MPI_Finalized(&flag));
    if (flag) {
        fprintf(stderr, "hello: MPI_Finalized says true before MPI_Init\n");
        return 1;
    }

    CHECK(MPI_Init(&argc, &argv));

    CHECK(MPI_Initialized(&flag));
    if (!flag) {
        fprintf(stderr, "hello: MPI_Initialized says false after MPI_Init\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(MPI_Get_processor_name(name, &len));
    if (len < 0 || len >= MPI_MAX_PROCESSOR_NAME || name[len] != '\0') {
        fprintf(stderr, "hello: rank %d: MPI_Get_processor_name returned bad length %d\n",
                rank, len);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    printf("Hello from rank %d of %d on %s\n", rank, size, name);
    fflush(stdout);

    CHECK(MPI_Finalize());

    CHECK(MPI_Finalized(&flag));
    if (!flag) {
        fprintf(stderr, "hello: MPI_Finalized says false after MPI_Finalize\n");
        return 1;
    }
    return 0;
}
