/* Fault injection, for tests/tests/faults.rs: every rank runs one kind of operation in a loop,
 * and rank VICTIM ends itself (SIGKILL, SIGSEGV, or exit without MPI_Finalize) from a timer
 * thread while the others are inside that operation with it.
 *   fault POINT HOW VICTIM MARKER
 *   POINT: init (before MPI_Init: the others wait in MPI_Init or their first barrier), eager, rndv (8 MiB ring transfers),
 *          bcast, allreduce, alltoall, barrier, split (communicator creation), finalize
 *   HOW:   kill, segv, exit (exit code 5)
 * Just before the fault the victim prints "fault PID NANOSECONDS" (CLOCK_REALTIME), so the test
 * can tell how long the teardown took. MARKER only makes the ranks findable in the process table. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static const char *how = "kill";
static int delay_ms = 300;

static void *fault_later(void *arg)
{
    (void)arg;
    usleep(delay_ms * 1000);
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    printf("fault %d %lld\n", (int)getpid(), (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    fflush(stdout);
    if (!strcmp(how, "exit"))
        _exit(5);
    /* No core dump: its writing would be counted as teardown time. */
    prctl(PR_SET_DUMPABLE, 0);
    raise(!strcmp(how, "segv") ? SIGSEGV : SIGKILL);
    return NULL;
}

static void arm(void)
{
    pthread_t t;
    if (pthread_create(&t, NULL, fault_later, NULL) != 0)
        abort();
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: fault POINT HOW VICTIM [MARKER]\n");
        return 2;
    }
    const char *point = argv[1];
    how = argv[2];
    int victim = atoi(argv[3]);
    /* Before MPI_Init the rank is not known: the launcher says it. */
    const char *r = getenv("PMI_RANK");
    int me = r ? atoi(r) : -1;
    /* The others go straight into MPI_Init and wait for the victim there (its PMI exchange, when
     * the transports need one) or in their first collective. */
    if (!strcmp(point, "init") && me == victim)
        fault_later(NULL);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == victim)
        arm();
    if (!strcmp(point, "finalize")) {
        if (rank == victim)
            sleep(30); /* dies in the meantime, while the others wait in MPI_Finalize */
        MPI_Finalize();
        return 0;
    }
    size_t n = !strcmp(point, "rndv") ? 8 << 20 : !strcmp(point, "eager") ? 1024
             : !strcmp(point, "alltoall") ? (size_t)size * (256 << 10) : 1 << 20;
    char *a = calloc(n, 1), *b = calloc(n, 1);
    double start = now();
    /* Bounded: the victim is gone long before, and the job with it. */
    while (now() - start < 30) {
        if (!strcmp(point, "eager") || !strcmp(point, "rndv")) {
            MPI_Sendrecv(a, (int)n, MPI_CHAR, next, 1, b, (int)n, MPI_CHAR, prev, 1, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        } else if (!strcmp(point, "bcast")) {
            MPI_Bcast(a, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD);
        } else if (!strcmp(point, "allreduce")) {
            MPI_Allreduce(a, b, (int)(n / sizeof(double)), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        } else if (!strcmp(point, "alltoall")) {
            MPI_Alltoall(a, (int)(n / size), MPI_CHAR, b, (int)(n / size), MPI_CHAR, MPI_COMM_WORLD);
        } else if (!strcmp(point, "barrier") || !strcmp(point, "init")) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else if (!strcmp(point, "split")) {
            MPI_Comm c;
            MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &c);
            MPI_Comm_free(&c);
        } else {
            fprintf(stderr, "fault: unknown point %s\n", point);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    fprintf(stderr, "fault: rank %d: still running 30 s after the fault\n", rank);
    MPI_Finalize();
    return 4;
}
