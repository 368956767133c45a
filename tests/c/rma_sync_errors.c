/* RMA synchronisation errors: every call outside the epoch it needs returns MPI_ERR_RMA_SYNC
 * (the window's handler is MPI_ERRORS_RETURN) and leaves the window usable; the valid
 * sequences around them (fence, a lock after a fence, PSCW, lock_all, MPI_PROC_NULL targets)
 * still work. Runs at any np >= 1; prints " No Errors" at rank 0 when all ranks agree. */
#include <mpi.h>
#include <stdio.h>

static int errs = 0, rank;

/* `call` must fail with MPI_ERR_RMA_SYNC. */
#define SYNC_ERR(call)                                                               \
    do {                                                                             \
        int rc_ = (call), cls_ = MPI_SUCCESS;                                        \
        if (rc_ != MPI_SUCCESS) MPI_Error_class(rc_, &cls_);                         \
        if (cls_ != MPI_ERR_RMA_SYNC) {                                              \
            errs++;                                                                  \
            printf("rank %d line %d: %s: class %d, not MPI_ERR_RMA_SYNC\n", rank,     \
                   __LINE__, #call, cls_);                                           \
            fflush(stdout);                                                          \
        }                                                                            \
    } while (0)

/* `call` must succeed. */
#define OK(call)                                                                     \
    do {                                                                             \
        int rc_ = (call);                                                            \
        if (rc_ != MPI_SUCCESS) {                                                    \
            char s_[MPI_MAX_ERROR_STRING];                                           \
            int l_;                                                                  \
            MPI_Error_string(rc_, s_, &l_);                                          \
            errs++;                                                                  \
            printf("rank %d line %d: %s: %s\n", rank, __LINE__, #call, s_);         \
            fflush(stdout);                                                          \
        }                                                                            \
    } while (0)

/* Every test on `win` (rank r's part holds at least 4 ints). */
static void check(MPI_Win win, int size) {
    int v = 7, g = 0, res = 0, cmp = 0;
    int right = (rank + 1) % size;
    MPI_Group world, self;
    MPI_Request req;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Comm_group(MPI_COMM_SELF, &self);

    /* No epoch: every operation and the calls that end an epoch. */
    SYNC_ERR(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    SYNC_ERR(MPI_Get(&g, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    SYNC_ERR(MPI_Accumulate(&v, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win));
    SYNC_ERR(MPI_Get_accumulate(&v, 1, MPI_INT, &res, 1, MPI_INT, right, 0, 1, MPI_INT,
                                MPI_SUM, win));
    SYNC_ERR(MPI_Fetch_and_op(&v, &res, MPI_INT, right, 0, MPI_SUM, win));
    SYNC_ERR(MPI_Compare_and_swap(&v, &cmp, &res, MPI_INT, right, 0, win));
    SYNC_ERR(MPI_Rput(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win, &req));
    SYNC_ERR(MPI_Win_complete(win));
    SYNC_ERR(MPI_Win_wait(win));
    int flag;
    SYNC_ERR(MPI_Win_test(win, &flag));
    SYNC_ERR(MPI_Win_unlock(right, win));
    SYNC_ERR(MPI_Win_unlock_all(win));
    SYNC_ERR(MPI_Win_flush(right, win));
    SYNC_ERR(MPI_Win_flush_all(win));
    SYNC_ERR(MPI_Win_flush_local(right, win));
    SYNC_ERR(MPI_Win_flush_local_all(win));
    /* MPI_PROC_NULL targets need no epoch. */
    OK(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));

    /* A fence epoch: operations work; lock, lock_all, start and post do not once it is used. */
    OK(MPI_Win_fence(0, win));
    OK(MPI_Accumulate(&v, 1, MPI_INT, right, 0, 1, MPI_INT, MPI_SUM, win));
    SYNC_ERR(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    SYNC_ERR(MPI_Win_lock_all(0, win));
    SYNC_ERR(MPI_Win_start(self, 0, win));
    SYNC_ERR(MPI_Win_post(self, 0, win));
    SYNC_ERR(MPI_Win_flush(right, win));
    SYNC_ERR(MPI_Win_unlock(right, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    /* NOSUCCEED closed it. */
    SYNC_ERR(MPI_Get(&g, 1, MPI_INT, right, 0, 1, MPI_INT, win));

    /* A fence not followed by operations may be followed by a lock; after the unlock no epoch
     * is left (MPICH's win_sync_lock_fence). */
    OK(MPI_Win_fence(0, win));
    OK(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    OK(MPI_Get(&g, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    /* Locked at `right` only: not at the rank after it. */
    if (size > 1) SYNC_ERR(MPI_Get(&g, 1, MPI_INT, (right + 1) % size, 0, 1, MPI_INT, win));
    SYNC_ERR(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    SYNC_ERR(MPI_Win_lock_all(0, win));
    SYNC_ERR(MPI_Win_fence(0, win));
    SYNC_ERR(MPI_Win_start(self, 0, win));
    SYNC_ERR(MPI_Win_free(&win));
    OK(MPI_Win_flush(right, win));
    OK(MPI_Win_flush_local_all(win));
    OK(MPI_Win_unlock(right, win));
    SYNC_ERR(MPI_Get(&g, 1, MPI_INT, right, 0, 1, MPI_INT, win));
    OK(MPI_Win_fence(0, win));

    /* lock_all. */
    OK(MPI_Win_lock_all(0, win));
    OK(MPI_Fetch_and_op(&v, &res, MPI_INT, right, 1, MPI_SUM, win));
    OK(MPI_Win_flush(right, win));
    SYNC_ERR(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    SYNC_ERR(MPI_Win_lock_all(0, win));
    SYNC_ERR(MPI_Win_unlock(right, win));
    SYNC_ERR(MPI_Win_complete(win));
    SYNC_ERR(MPI_Win_free(&win));
    OK(MPI_Win_unlock_all(win));
    SYNC_ERR(MPI_Win_unlock_all(win));

    /* PSCW on this rank alone (self group): start and post nest with themselves only. */
    OK(MPI_Win_post(self, 0, win));
    SYNC_ERR(MPI_Win_post(self, 0, win));
    SYNC_ERR(MPI_Win_fence(0, win));
    SYNC_ERR(MPI_Win_free(&win));
    OK(MPI_Win_start(self, 0, win));
    SYNC_ERR(MPI_Win_start(self, 0, win));
    SYNC_ERR(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    OK(MPI_Put(&v, 1, MPI_INT, rank, 2, 1, MPI_INT, win));
    if (size > 1) SYNC_ERR(MPI_Put(&v, 1, MPI_INT, right, 2, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    SYNC_ERR(MPI_Win_complete(win));
    OK(MPI_Win_wait(win));
    SYNC_ERR(MPI_Win_wait(win));

    /* Full PSCW with everyone (Win_test to the end), then the window still works. */
    OK(MPI_Win_post(world, 0, win));
    OK(MPI_Win_start(world, 0, win));
    OK(MPI_Put(&v, 1, MPI_INT, right, 3, 1, MPI_INT, win));
    OK(MPI_Win_complete(win));
    flag = 0;
    while (!flag) OK(MPI_Win_test(win, &flag));
    SYNC_ERR(MPI_Win_test(win, &flag));
    OK(MPI_Win_fence(0, win));
    OK(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));

    MPI_Group_free(&world);
    MPI_Group_free(&self);
}

int main(int argc, char **argv) {
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Win_create (CMA or messages), Win_allocate (mapped or messages), dynamic (messages). */
    int buf[4] = {0, 0, 0, 0};
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    check(win, size);
    OK(MPI_Win_free(&win));

    int *abuf;
    MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &abuf, &win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    check(win, size);
    OK(MPI_Win_free(&win));

    int total = 0;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) printf(" No Errors\n");
    MPI_Finalize();
    return total != 0;
}
