/* Bad arguments under the default MPI_ERRORS_ARE_FATAL: the job aborts with a message naming
 * the call and the problem. argv[1] picks the mistake. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    const char *what = argc > 1 ? argv[1] : "";
    int rank, x;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (strcmp(what, "free_world") == 0) {
        MPI_Comm w = MPI_COMM_WORLD;
        MPI_Comm_free(&w);
    } else if (strcmp(what, "split_color") == 0) {
        MPI_Comm c;
        MPI_Comm_split(MPI_COMM_WORLD, -7, 0, &c);
    } else if (strcmp(what, "group_incl") == 0) {
        MPI_Group g, n;
        MPI_Comm_group(MPI_COMM_WORLD, &g);
        MPI_Group_incl(g, 1, (int[]){99}, &n);
    } else if (strcmp(what, "keyval") == 0) {
        MPI_Comm_set_attr(MPI_COMM_WORLD, 4242, NULL);
    } else if (strcmp(what, "dup_comm_null") == 0) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_NULL, &c);
    } else if (strcmp(what, "errors_abort") == 0) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ABORT);
        MPI_Send(&x, 1, MPI_INT, 0, -4, MPI_COMM_WORLD);
    }
    printf("not reached\n");
    MPI_Finalize();
    return 0;
}
