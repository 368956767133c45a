/* MPI_Comm_split_type(MPI_COMM_TYPE_HW_GUIDED) by hardware level. What to expect is worked out from
 * where mpirun says each rank is held (RMPI_LOCALITY, gathered from all ranks): ranks held within
 * the same object share a communicator, ordered by key; a rank not held within one object gets
 * MPI_COMM_NULL. Prints "hw_guided ok N" with N the number of non-null communicators it got. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int index_of(const char *type) {
    const char *loc = getenv("RMPI_LOCALITY");
    if (!loc) return -1;
    size_t n = strlen(type);
    for (const char *p = loc; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, type, n) == 0 && p[n] == ':') return p[n + 1] == '-' ? -1 : atoi(p + n + 1);
    return -1;
}

int main(int argc, char **argv) {
    const char *types[] = {"Package", "NUMANode", "L3Cache", "L2Cache", "Core", "PU"};
    int rank, size, errs = 0, got = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int *all = malloc(sizeof(int) * size);
    for (int t = 0; t < 6; t++) {
        int mine = index_of(types[t]);
        MPI_Allgather(&mine, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
        int want_size = 0, want_rank = 0;
        for (int r = 0; r < size; r++)
            if (mine >= 0 && all[r] == mine) {
                if (r < rank) want_rank++;
                want_size++;
            }
        MPI_Info info;
        MPI_Info_create(&info);
        MPI_Info_set(info, "mpi_hw_resource_type", types[t]);
        MPI_Comm c;
        int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &c);
        if (rc != MPI_SUCCESS) { printf("rank %d %s: rc %d\n", rank, types[t], rc); errs++; }
        if (mine < 0) {
            if (c != MPI_COMM_NULL) { printf("rank %d %s: not held within one, got a comm\n", rank, types[t]); errs++; }
        } else if (c == MPI_COMM_NULL) {
            printf("rank %d %s: held within %d, got MPI_COMM_NULL\n", rank, types[t], mine); errs++;
        } else {
            int n, r, flag;
            char v[64] = "";
            MPI_Comm_size(c, &n);
            MPI_Comm_rank(c, &r);
            MPI_Info out;
            MPI_Comm_get_info(c, &out);
            MPI_Info_get(out, "mpi_hw_resource_type", sizeof v - 1, v, &flag);
            MPI_Info_free(&out);
            if (n != want_size || r != want_rank || !flag || strcmp(v, types[t]) != 0) {
                printf("rank %d %s: size %d rank %d info '%s', expected %d, %d\n", rank, types[t], n, r, v, want_size, want_rank);
                errs++;
            }
            /* The members really share it: a reduction over it counts them. */
            int one = 1, sum = 0;
            MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c);
            if (sum != want_size) { printf("rank %d %s: allreduce %d\n", rank, types[t], sum); errs++; }
            MPI_Comm_free(&c);
            got++;
        }
        MPI_Info_free(&info);
    }
    /* Open MPI's spelling of the package level is taken too. */
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_hw_resource_type", "socket");
    MPI_Comm c;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, rank, info, &c);
    if ((c == MPI_COMM_NULL) != (index_of("Package") < 0)) { printf("rank %d socket alias\n", rank); errs++; }
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
    MPI_Info_free(&info);
    free(all);
    int total;
    MPI_Allreduce(&errs, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (total == 0) printf("hw_guided ok %d\n", got);
    MPI_Finalize();
    return total != 0;
}
