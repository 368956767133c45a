/* Releases memory the ways an MPI application does (a 1 MiB block given back by free(), an
 * explicit munmap) between MPI_Init and MPI_Finalize; run with --mca memhook_verbose 1, each rank
 * then reports the memory-release provider's status and event counters on stderr. */
#include <malloc.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* glibc raises its mmap threshold after freeing a mapped block (libmpi may have); a fixed
     * threshold makes free() of 1 MiB a munmap again. */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    char *p = malloc(1 << 20);
    memset(p, 1, 1 << 20);
    __asm__ volatile("" : : "r"(p) : "memory"); /* keep the compiler from eliding the block */
    free(p);
    char *m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) MPI_Abort(MPI_COMM_WORLD, 1);
    m[0] = 1;
    munmap(m, 4 * 4096);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
