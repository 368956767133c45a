/*
 * line_probe.c -- how long one cache line takes to move between two CPUs, one way, in ns.
 * bench-compare --osu builds it with the system C compiler (not an MPI) and runs it before and
 * after every benchmark run, so that each figure names the state the machine was in.
 *
 *   line_probe [-v] [CPU_A CPU_B [ROUND_TRIPS [TRIALS]]]      defaults: 0 1 2000 31
 *
 * Two processes, pinned to CPU_A and CPU_B, share two cache lines of one page (anonymous
 * MAP_SHARED memory): A stores n in `ping` and spins until B has stored n in `pong`; B spins for
 * n in `ping` and answers. This is the protocol of the project's reference probe
 * (shared/perf/line-probe.c), so the figures are on its scale (~30, 55, 110 or 270 ns on the
 * development VM; fast < 120, slow > 200). One line bounced both ways, as this program did before
 * 2026-11-28, reads about half as much (60-85 ns where the reference read 136-150), so earlier
 * "fast" figures of bench-compare were middle states. One untimed trial, then TRIALS timed trials of
 * ROUND_TRIPS round trips each. stdout gets one line, two numbers in ns one way (round trip / 2):
 * the fastest trial's, which is the line transfer itself, and the median trial's. A trial during
 * which another process had one of the CPUs is only ever slower, so on a loaded machine the first
 * number still names where the CPUs sit while the median grows with the load (short trials, many
 * of them, so that some fall between preemptions). -v adds every trial on stderr. No pause
 * instruction in the spin loops: it would add its own delay.
 *
 * On a VM the figure tells where the two vCPUs sit on the host (hyperthreads of one core, one
 * socket, two sockets) at the moment; it changes when the hypervisor moves them.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The whole job is bounded: a partner that never answers must not leave a CPU spinning. */
#define LIMIT_S 30

static void pin(int cpu, const char *who)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        fprintf(stderr, "line_probe: %s cannot run on CPU %d: ", who, cpu);
        perror("sched_setaffinity");
        exit(2);
    }
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static long arg(const char *s, long min, const char *what)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v < min) {
        fprintf(stderr, "line_probe: '%s' is not a valid %s\n", s, what);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv)
{
    int verbose = 0;
    if (argc > 1 && !strcmp(argv[1], "-v")) {
        verbose = 1;
        argv++;
        argc--;
    }
    if (argc != 1 && argc != 3 && argc != 4 && argc != 5) {
        fprintf(stderr, "usage: line_probe [-v] [CPU_A CPU_B [ROUND_TRIPS [TRIALS]]]\n");
        return 2;
    }
    int cpu_a = argc > 1 ? (int)arg(argv[1], 0, "CPU") : 0;
    int cpu_b = argc > 2 ? (int)arg(argv[2], 0, "CPU") : 1;
    long trips = argc > 3 ? arg(argv[3], 1, "round-trip count") : 2000;
    long trials = argc > 4 ? arg(argv[4], 1, "trial count") : 31;
    if (cpu_a == cpu_b) {
        fprintf(stderr, "line_probe: the two CPUs must differ\n");
        return 2;
    }
    double *ns = calloc((size_t)trials, sizeof *ns);
    /* A page of its own: the two lines share it with nothing else. */
    _Atomic unsigned long *ping = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
                                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (!ns || ping == MAP_FAILED) {
        perror("line_probe: memory");
        return 2;
    }
    /* Set by the second process once it runs on its CPU, in another line of the page. */
    _Atomic unsigned long *pong = ping + 16;
    _Atomic int *ready = (_Atomic int *)((char *)ping + 2048);
    atomic_store(ping, 0);
    atomic_store(pong, 0);
    atomic_store(ready, 0);
    alarm(LIMIT_S);
    unsigned long last = (unsigned long)trips * (unsigned long)(trials + 1) + 1;
    pid_t child = fork();
    if (child < 0) {
        perror("line_probe: fork");
        return 2;
    }
    if (child == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin(cpu_b, "the second process");
        atomic_store(ready, 1);
        for (unsigned long want = 1; want < last; want++) {
            while (atomic_load_explicit(ping, memory_order_acquire) != want)
                ;
            atomic_store_explicit(pong, want, memory_order_release);
        }
        _exit(0);
    }
    pin(cpu_a, "the first process");
    int status = 0;
    while (!atomic_load(ready)) {
        if (waitpid(child, &status, WNOHANG) == child) {
            fprintf(stderr, "line_probe: the second process failed\n");
            return 2;
        }
        sched_yield();
    }
    unsigned long v = 0;
    for (long t = -1; t < trials; t++) {
        double t0 = now_ns();
        for (long i = 0; i < trips; i++) {
            v++;
            atomic_store_explicit(ping, v, memory_order_release);
            while (atomic_load_explicit(pong, memory_order_acquire) != v)
                ;
        }
        if (t >= 0)
            ns[t] = (now_ns() - t0) / (2.0 * (double)trips);
    }
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "line_probe: the second process failed\n");
        return 2;
    }
    if (verbose) {
        fprintf(stderr, "line_probe: CPUs %d and %d, %ld round trips per trial, one way (ns):",
                cpu_a, cpu_b, trips);
        for (long t = 0; t < trials; t++)
            fprintf(stderr, " %.1f", ns[t]);
        fprintf(stderr, "\n");
    }
    qsort(ns, (size_t)trials, sizeof *ns, cmp);
    double median = trials % 2 ? ns[trials / 2] : (ns[trials / 2 - 1] + ns[trials / 2]) / 2.0;
    printf("%.1f %.1f\n", ns[0], median);
    return 0;
}
