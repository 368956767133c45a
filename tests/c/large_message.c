/* Counts beyond 2^31 really work: a 3 GiB message of MPI_BYTE with MPI_Send_c/MPI_Recv_c
 * (rank 0 to rank 1, status count checked with MPI_Get_count_c), then MPI_Bcast_c of the same
 * buffer from rank 1, data checked at sampled offsets (and the last bytes). One 3 GiB buffer
 * per rank; skipped, with the reason printed, when MemAvailable is under 8 GiB. Needs np 2
 * (extra ranks only take part in the broadcast, with a smaller check). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEN ((MPI_Count)3 << 30)

static long mem_available_kb(void) {
    FILE *f = fopen("/proc/meminfo", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

static unsigned char pattern(MPI_Count i, int salt) {
    return (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)salt;
}

/* Check every 4093rd byte and the last 4096. */
static int check(const unsigned char *b, int salt, const char *what, int rank) {
    for (MPI_Count i = 0; i < LEN; i += (i >= LEN - 4096 ? 1 : 4093))
        if (b[i] != pattern(i, salt)) {
            printf("rank %d: %s: byte %lld = %d, want %d\n", rank, what, (long long)i, b[i],
                   pattern(i, salt));
            return 1;
        }
    return 0;
}

static void fill(unsigned char *b, int salt) {
    for (MPI_Count i = 0; i < LEN; i++)
        b[i] = pattern(i, salt);
}

int main(int argc, char **argv) {
    int rank, size, errs = 0, skip = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long kb = mem_available_kb();
    if (rank == 0 && kb < 8L * 1024 * 1024)
        skip = 1;
    MPI_Bcast(&skip, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (skip) {
        if (rank == 0)
            printf("skipped: MemAvailable is %ld kB, under 8 GiB\n No Errors\n", kb);
        MPI_Finalize();
        return 0;
    }
    unsigned char *buf = malloc(LEN);
    if (!buf) {
        printf("rank %d: cannot allocate %lld bytes\n", rank, (long long)LEN);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0) {
        fill(buf, 1);
        MPI_Send_c(buf, LEN, MPI_BYTE, 1, 5, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Status st;
        MPI_Count got = 0;
        memset(buf, 0, LEN);
        MPI_Recv_c(buf, LEN, MPI_BYTE, 0, 5, MPI_COMM_WORLD, &st);
        MPI_Get_count_c(&st, MPI_BYTE, &got);
        if (got != LEN) {
            printf("rank 1: received %lld bytes, want %lld\n", (long long)got, (long long)LEN);
            errs++;
        }
        errs += check(buf, 1, "send/recv", rank);
        fill(buf, 2);
    }
    if (rank != 1)
        memset(buf, 0, LEN);
    MPI_Bcast_c(buf, LEN, MPI_BYTE, 1, MPI_COMM_WORLD);
    errs += check(buf, 2, "bcast", rank);
    free(buf);
    int total = 0;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
