/* Shared by the coll_*.c tests: an error counter and the MPICH-style " No Errors" ending. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
static int rank, size;

#define CHECK(cond, ...)                                     \
    do {                                                     \
        if (!(cond)) {                                       \
            if (errs < 10) {                                 \
                printf("rank %d: %s:%d: ", rank, __FILE__, __LINE__); \
                printf(__VA_ARGS__);                         \
                printf("\n");                                \
                fflush(stdout);                              \
            }                                                \
            errs++;                                          \
        }                                                    \
    } while (0)

static void start(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
}

static int finish(void) {
    int total = 0;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}

static inline void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}
