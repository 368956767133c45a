/* Multi-threaded message rate (MPI_THREAD_MULTIPLE): each rank runs T threads, and thread t of
 * rank 2k sends windows of W non-blocking sends to thread t of rank 2k+1, which posts W
 * receives, waits for them and answers with a 4-byte ack (osu_bw's pattern, one per pair of
 * threads). Each pair of threads has its own communicator (a duplicate made before the threads
 * start), or its own tag on COMM_WORLD with --tag. Prints the aggregate rate of all pairs of
 * threads of ranks 0 and 1, in millions of messages per second, per message size; every
 * received byte is checked once per size.
 *   mpicc -O2 -pthread benchmarks/c/mt_rate.c -o mt_rate
 *   mpirun -np 2 ./mt_rate [-t THREADS] [-w WINDOW] [-n ITERATIONS] [--tag] [SIZES...]
 * With -t 1 the one thread still calls MPI through MPI_THREAD_MULTIPLE, so the two rows
 * compare the same library settings. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_THREADS 64

struct job {
    int t, rank, peer, size, window, iters, by_tag;
    MPI_Comm comm;
    int errors;
};

static unsigned char byte_of(int t, int i) { return (unsigned char)(t * 37 + i * 11 + 1); }

static void *run(void *arg) {
    struct job *j = arg;
    int tag = j->by_tag ? j->t : 0;
    unsigned char *buf = malloc((size_t)j->size * j->window + 1);
    MPI_Request *req = malloc(sizeof(*req) * j->window);
    char ack[4] = {0};
    int sender = j->rank % 2 == 0;
    if (sender)
        for (int i = 0; i < j->size * j->window; i++)
            buf[i] = byte_of(j->t, i);
    for (int it = 0; it < j->iters; it++) {
        for (int w = 0; w < j->window; w++) {
            unsigned char *b = buf + (size_t)w * j->size;
            if (sender)
                MPI_Isend(b, j->size, MPI_BYTE, j->peer, tag, j->comm, &req[w]);
            else
                MPI_Irecv(b, j->size, MPI_BYTE, j->peer, tag, j->comm, &req[w]);
        }
        MPI_Waitall(j->window, req, MPI_STATUSES_IGNORE);
        if (sender)
            MPI_Recv(ack, 4, MPI_BYTE, j->peer, tag + MAX_THREADS, j->comm, MPI_STATUS_IGNORE);
        else
            MPI_Send(ack, 4, MPI_BYTE, j->peer, tag + MAX_THREADS, j->comm);
        if (!sender && it == 0)
            for (int i = 0; i < j->size * j->window; i++)
                if (buf[i] != byte_of(j->t, i)) {
                    j->errors++;
                    break;
                }
    }
    free(req);
    free(buf);
    return NULL;
}

int main(int argc, char **argv) {
    int provided, rank, np;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int threads = 1, window = 64, iters = 2000, by_tag = 0, nsizes = 0;
    int sizes[32];
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "-t") && a + 1 < argc)
            threads = atoi(argv[++a]);
        else if (!strcmp(argv[a], "-w") && a + 1 < argc)
            window = atoi(argv[++a]);
        else if (!strcmp(argv[a], "-n") && a + 1 < argc)
            iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--tag"))
            by_tag = 1;
        else if (nsizes < 32)
            sizes[nsizes++] = atoi(argv[a]);
    }
    if (nsizes == 0) {
        int def[] = {1, 8, 64, 512, 4096};
        nsizes = 5;
        memcpy(sizes, def, sizeof(def));
    }
    if (provided < MPI_THREAD_MULTIPLE || np % 2 || threads < 1 || threads > MAX_THREADS ||
        window < 1 || iters < 1) {
        if (rank == 0)
            fprintf(stderr, "mt_rate: needs MPI_THREAD_MULTIPLE (provided %d), an even number of "
                            "ranks, 1-%d threads, a window and iterations of at least 1\n",
                    provided, MAX_THREADS);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm comms[MAX_THREADS];
    for (int t = 0; t < threads; t++) {
        if (by_tag)
            comms[t] = MPI_COMM_WORLD;
        else
            MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
    }
    if (rank == 0)
        printf("# mt_rate: %d ranks, %d thread(s) per rank, window %d, %d iterations, %s\n", np,
               threads, window, iters, by_tag ? "a tag per thread" : "a communicator per thread");
    int errors = 0;
    for (int s = 0; s < nsizes; s++) {
        struct job jobs[MAX_THREADS];
        pthread_t tid[MAX_THREADS];
        for (int t = 0; t < threads; t++)
            jobs[t] = (struct job){t, rank, rank ^ 1, sizes[s], window, iters, by_tag, comms[t], 0};
        /* One untimed window per pair first (first touches, the receive path's caches). */
        struct job warm[MAX_THREADS];
        for (int t = 0; t < threads; t++) {
            warm[t] = jobs[t];
            warm[t].iters = 1;
            pthread_create(&tid[t], NULL, run, &warm[t]);
        }
        for (int t = 0; t < threads; t++)
            pthread_join(tid[t], NULL);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int t = 0; t < threads; t++)
            pthread_create(&tid[t], NULL, run, &jobs[t]);
        for (int t = 0; t < threads; t++) {
            pthread_join(tid[t], NULL);
            errors += jobs[t].errors;
        }
        double dt = MPI_Wtime() - t0;
        double rate = (double)threads * iters * window / dt / 1e6, slowest;
        MPI_Reduce(&rate, &slowest, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%-8d %10.3f Mmsg/s\n", sizes[s], slowest);
    }
    int all;
    MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf(all ? "%d errors\n" : " No Errors\n", all);
    for (int t = 0; t < threads; t++)
        if (!by_tag)
            MPI_Comm_free(&comms[t]);
    MPI_Finalize();
    return all != 0;
}
