/* Shared helpers for the datatype tests: error counting and the MPICH-style summary line. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            errs++;                                                          \
            printf("rank %d, %s:%d: ", rank_, __FILE__, __LINE__);           \
            printf(__VA_ARGS__);                                             \
            printf("\n");                                                    \
            fflush(stdout);                                                  \
        }                                                                    \
    } while (0)

static int rank_, size_;

static void start(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

/* Rank 0 collects every rank's error count and prints the summary. */
static int finish(void) {
    if (rank_ == 0) {
        int total = errs;
        for (int r = 1; r < size_; r++) {
            int e;
            MPI_Recv(&e, 1, MPI_INT, r, 9999, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            total += e;
        }
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    } else {
        MPI_Send(&errs, 1, MPI_INT, 0, 9999, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}

static int next_rank(void) { return (rank_ + 1) % size_; }
static int prev_rank(void) { return (rank_ + size_ - 1) % size_; }

static void check_extent(MPI_Datatype t, int size, MPI_Aint lb, MPI_Aint extent, MPI_Aint tlb,
                         MPI_Aint textent, const char *what) {
    int s;
    MPI_Aint l, e;
    MPI_Type_size(t, &s);
    CHECK(s == size, "%s: size %d, expected %d", what, s, size);
    MPI_Type_get_extent(t, &l, &e);
    CHECK(l == lb && e == extent, "%s: lb %ld extent %ld, expected %ld %ld", what, (long)l, (long)e,
          (long)lb, (long)extent);
    MPI_Type_get_true_extent(t, &l, &e);
    CHECK(l == tlb && e == textent, "%s: true lb %ld extent %ld, expected %ld %ld", what, (long)l,
          (long)e, (long)tlb, (long)textent);
}
