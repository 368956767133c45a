/* Subarrays in C and Fortran order: extents, a 3-D block exchanged around the ring into a
 * contiguous buffer and into the same block of another array. */
#include "dtype_util.h"

#define X 6
#define Y 5
#define Z 4

int main(int argc, char **argv) {
    start(&argc, &argv);
    int a[X][Y][Z], b[X][Y][Z], flat[3 * 2 * 2];
    int sizes[3] = {X, Y, Z}, sub[3] = {3, 2, 2}, starts[3] = {2, 1, 1};
    for (int i = 0; i < X; i++)
        for (int j = 0; j < Y; j++)
            for (int k = 0; k < Z; k++) a[i][j][k] = rank_ * 1000 + i * 100 + j * 10 + k;

    MPI_Datatype c3;
    MPI_Type_create_subarray(3, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &c3);
    MPI_Type_commit(&c3);
    int first = ((2 * Y + 1) * Z + 1) * 4, last = ((4 * Y + 2) * Z + 2 + 1) * 4;
    check_extent(c3, 12 * 4, 0, X * Y * Z * 4, first, last - first, "C subarray");

    MPI_Sendrecv(a, 1, c3, next_rank(), 0, flat, 12, MPI_INT, prev_rank(), 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int n = 0;
    for (int i = 2; i < 5; i++)
        for (int j = 1; j < 3; j++)
            for (int k = 1; k < 3; k++, n++) {
                int want = prev_rank() * 1000 + i * 100 + j * 10 + k;
                CHECK(flat[n] == want, "flat[%d] = %d, want %d", n, flat[n], want);
            }

    memset(b, 0, sizeof b);
    MPI_Sendrecv(a, 1, c3, next_rank(), 1, b, 1, c3, prev_rank(), 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < X; i++)
        for (int j = 0; j < Y; j++)
            for (int k = 0; k < Z; k++) {
                int in = i >= 2 && i < 5 && j >= 1 && j < 3 && k >= 1 && k < 3;
                int want = in ? prev_rank() * 1000 + i * 100 + j * 10 + k : 0;
                CHECK(b[i][j][k] == want, "b[%d][%d][%d] = %d", i, j, k, b[i][j][k]);
            }

    /* Fortran order over a column-major 2-D array m(R, C): element (r, c) at r + R c. */
    enum { R = 7, C = 3 };
    double m[R * C], col[4 * 2];
    for (int i = 0; i < R * C; i++) m[i] = rank_ + i * 0.25;
    int fs[2] = {R, C}, fsub[2] = {4, 2}, fst[2] = {3, 1};
    MPI_Datatype f2;
    MPI_Type_create_subarray(2, fs, fsub, fst, MPI_ORDER_FORTRAN, MPI_DOUBLE, &f2);
    MPI_Type_commit(&f2);
    check_extent(f2, 8 * 8, 0, R * C * 8, (3 + R) * 8, ((6 + 2 * R) - (3 + R) + 1) * 8,
                 "Fortran subarray");
    MPI_Sendrecv(m, 1, f2, next_rank(), 2, col, 8, MPI_DOUBLE, prev_rank(), 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    n = 0;
    for (int c = 1; c < 3; c++)
        for (int r = 3; r < 7; r++, n++)
            CHECK(col[n] == prev_rank() + (r + R * c) * 0.25, "f[%d] = %g", n, col[n]);

    /* Bad arguments come back as errors. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Datatype bad = MPI_DATATYPE_NULL;
    int big[3] = {5, 2, 2};
    int rc = MPI_Type_create_subarray(3, sizes, big, starts, MPI_ORDER_C, MPI_INT, &bad);
    CHECK(rc != MPI_SUCCESS, "subarray past the array accepted");
    rc = MPI_Type_create_subarray(3, sizes, sub, starts, 42, MPI_INT, &bad);
    CHECK(rc != MPI_SUCCESS, "bad order accepted");

    MPI_Type_free(&c3);
    MPI_Type_free(&f2);
    return finish();
}
