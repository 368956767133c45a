/* MPI_Bcast and MPI_Ibcast: every root, zero/small/large (scatter+allgather) sizes, several types. */
#include "coll_util.h"

int main(int argc, char **argv) {
    start(&argc, &argv);
    int counts[] = {0, 1, 7, 1000, 70000, 300000}; /* 300000 ints = 1.2 MB */
    for (int ci = 0; ci < 6; ci++) {
        int n = counts[ci];
        int *buf = xmalloc(n * sizeof(int));
        for (int root = 0; root < size; root++) {
            for (int i = 0; i < n; i++)
                buf[i] = rank == root ? i * 3 + root : -1;
            MPI_Bcast(buf, n, MPI_INT, root, MPI_COMM_WORLD);
            int bad = 0;
            for (int i = 0; i < n; i++)
                bad += buf[i] != i * 3 + root;
            CHECK(bad == 0, "bcast int count %d root %d: %d wrong", n, root, bad);

            MPI_Request req;
            for (int i = 0; i < n; i++)
                buf[i] = rank == root ? i ^ root : -1;
            MPI_Ibcast(buf, n, MPI_INT, root, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
            bad = 0;
            for (int i = 0; i < n; i++)
                bad += buf[i] != (i ^ root);
            CHECK(bad == 0, "ibcast int count %d root %d: %d wrong", n, root, bad);
        }
        free(buf);
    }
    /* Doubles and bytes of odd lengths (large path splits on bytes). */
    int nd = 131073;
    double *d = xmalloc(nd * sizeof(double));
    for (int i = 0; i < nd; i++)
        d[i] = rank == size - 1 ? i * 0.5 : 0;
    MPI_Bcast(d, nd, MPI_DOUBLE, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < nd; i++)
        CHECK(d[i] == i * 0.5, "bcast double [%d] = %g", i, d[i]);
    free(d);
    int nb = 1048577;
    unsigned char *c = xmalloc(nb);
    for (int i = 0; i < nb; i++)
        c[i] = rank == 0 ? (unsigned char)(i * 7) : 0;
    MPI_Bcast(c, nb, MPI_BYTE, 0, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < nb; i++)
        bad += c[i] != (unsigned char)(i * 7);
    CHECK(bad == 0, "bcast bytes: %d wrong", bad);
    free(c);
    /* Bad root comes back as MPI_ERR_ROOT. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 0, cls = 0;
    int rc = MPI_Bcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_ROOT, "bcast root=size gave class %d", cls);
    /* Mismatched counts: receivers of the longer message see MPI_ERR_TRUNCATE, nobody hangs. */
    int ten[10] = {0};
    rc = MPI_Bcast(ten, rank == 0 ? 10 : 5, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(rc == MPI_SUCCESS || cls == MPI_ERR_TRUNCATE, "mismatched bcast gave class %d", cls);
    int truncated = rc != MPI_SUCCESS, any = 0;
    MPI_Allreduce(&truncated, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    CHECK(any == (size > 1), "mismatched bcast: truncation reported %d", any);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return finish();
}
