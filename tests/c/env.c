/* Environment calls: thread levels, init/finalize flags, versions, memory, clocks. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>

static void *other_thread(void *arg) {
    int *flag = arg;
    MPI_Is_thread_main(flag);
    return NULL;
}

static int errs = 0, rank = -1;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

int main(int argc, char **argv) {
    int flag, provided, v, sv, len, rc;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    MPI_Initialized(&flag);
    CHECK(!flag, "initialized before MPI_Init_thread");
    MPI_Finalized(&flag);
    CHECK(!flag, "finalized before MPI_Init_thread");
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Query_thread(&v);
    CHECK(v == provided, "query_thread %d", v);
    MPI_Is_thread_main(&flag);
    CHECK(flag, "not the main thread");
    {
        pthread_t t;
        int other = -1;
        pthread_create(&t, NULL, other_thread, &other);
        pthread_join(t, NULL);
        CHECK(other == 0, "another thread is the main thread? %d", other);
    }
    MPI_Initialized(&flag);
    CHECK(flag, "not initialized");
    MPI_Finalized(&flag);
    CHECK(!flag, "finalized too early");

    MPI_Get_version(&v, &sv);
    CHECK(v == MPI_VERSION && sv == MPI_SUBVERSION, "version %d.%d", v, sv);
    MPI_Get_library_version(lib, &len);
    CHECK(len > 0 && (int)strlen(lib) == len, "library version '%s' (%d)", lib, len);
    MPI_Abi_get_version(&v, &sv);
    CHECK(v >= 1 && sv >= 0, "abi version %d.%d", v, sv);

    /* Clocks. */
    {
        double t0 = MPI_Wtime(), t1 = MPI_Wtime(), tick = MPI_Wtick();
        CHECK(t1 >= t0 && tick > 0 && tick < 1, "wtime %g %g tick %g", t0, t1, tick);
    }

    /* Memory. */
    {
        int *p = NULL;
        rc = MPI_Alloc_mem(100 * sizeof(int), MPI_INFO_NULL, &p);
        CHECK(rc == MPI_SUCCESS && p != NULL, "alloc_mem rc %d", rc);
        for (int i = 0; i < 100; i++) p[i] = i;
        MPI_Free_mem(p);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        rc = MPI_Alloc_mem((MPI_Aint)1 << 62, MPI_INFO_NULL, &p);
        CHECK(rc == MPI_ERR_NO_MEM, "huge alloc_mem rc %d", rc);
        rc = MPI_Alloc_mem(-1, MPI_INFO_NULL, &p);
        CHECK(rc == MPI_ERR_ARG, "negative alloc_mem rc %d", rc);
    }
    /* MPI_Init again is an error. */
    rc = MPI_Init(&argc, &argv);
    CHECK(rc != MPI_SUCCESS, "second MPI_Init succeeded");

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    MPI_Finalized(&flag);
    CHECK(flag, "not finalized after MPI_Finalize");
    MPI_Initialized(&flag);
    CHECK(flag, "MPI_Initialized false after MPI_Finalize");
    if (rank == 0 && errs == 0) printf(" No Errors\n");
    return errs != 0;
}
