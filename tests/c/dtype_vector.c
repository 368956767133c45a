/* Vector and hvector types: sizes, extents, a matrix column sent around a ring and received
 * as a contiguous array (same type signature), negative strides, nested vectors, count > 1. */
#include "dtype_util.h"

#define N 8

int main(int argc, char **argv) {
    start(&argc, &argv);
    double m[N][N], col[N], back[N][N];
    MPI_Datatype column, hcol, rev, twocols, stripe;

    MPI_Type_vector(N, 1, N, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    check_extent(column, N * 8, 0, ((N - 1) * N + 1) * 8, 0, ((N - 1) * N + 1) * 8, "column");

    /* Column 3 of my matrix goes to the next rank, which receives it contiguously. */
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) m[i][j] = rank_ * 1000 + i * N + j;
    MPI_Sendrecv(&m[0][3], 1, column, next_rank(), 0, col, N, MPI_DOUBLE, prev_rank(), 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        CHECK(col[i] == prev_rank() * 1000 + i * N + 3, "col[%d] = %g", i, col[i]);

    /* And back: contiguous into a column of a zeroed matrix; the rest stays untouched. */
    memset(back, 0, sizeof back);
    MPI_Sendrecv(col, N, MPI_DOUBLE, prev_rank(), 1, &back[0][5], 1, column, next_rank(), 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double want = j == 5 ? rank_ * 1000 + i * N + 3 : 0;
            CHECK(back[i][j] == want, "back[%d][%d] = %g, want %g", i, j, back[i][j], want);
        }

    /* hvector with a byte stride equals the vector. */
    MPI_Type_create_hvector(N, 1, N * sizeof(double), MPI_DOUBLE, &hcol);
    MPI_Type_commit(&hcol);
    check_extent(hcol, N * 8, 0, ((N - 1) * N + 1) * 8, 0, ((N - 1) * N + 1) * 8, "hcol");

    /* Negative stride: the diagonal from the bottom-right corner up. */
    MPI_Type_vector(N, 1, -(N + 1), MPI_DOUBLE, &rev);
    MPI_Type_commit(&rev);
    check_extent(rev, N * 8, -(N - 1) * (N + 1) * 8, ((N - 1) * (N + 1) + 1) * 8,
                 -(N - 1) * (N + 1) * 8, ((N - 1) * (N + 1) + 1) * 8, "rev");
    MPI_Sendrecv(&m[N - 1][N - 1], 1, rev, next_rank(), 2, col, N, MPI_DOUBLE, prev_rank(), 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < N; i++) {
        int k = N - 1 - i;
        CHECK(col[i] == prev_rank() * 1000 + k * N + k, "diag[%d] = %g", i, col[i]);
    }

    /* Nested: 2 adjacent columns (vector of blocklength 2), and 2 of those (count 2) = 4 cols,
     * where the second element starts one extent (= 2 columns' span) later. */
    MPI_Type_vector(N, 2, N, MPI_DOUBLE, &twocols);
    MPI_Type_create_resized(twocols, 0, 2 * sizeof(double), &stripe);
    MPI_Type_commit(&stripe);
    double four[N * 4];
    MPI_Sendrecv(&m[0][2], 2, stripe, next_rank(), 3, four, N * 4, MPI_DOUBLE, prev_rank(), 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    /* Element 0: rows of cols 2,3; element 1: rows of cols 4,5. */
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < N; i++)
            for (int c = 0; c < 2; c++) {
                double got = four[e * 2 * N + i * 2 + c];
                double want = prev_rank() * 1000 + i * N + 2 + 2 * e + c;
                CHECK(got == want, "stripe e%d i%d c%d = %g, want %g", e, i, c, got, want);
            }

    /* Zero count and zero blocklength move nothing. */
    MPI_Datatype empty;
    MPI_Type_vector(0, 1, 4, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    check_extent(empty, 0, 0, 0, 0, 0, "empty vector");
    MPI_Status st;
    int cnt = -1;
    MPI_Sendrecv(NULL, 3, empty, next_rank(), 4, NULL, 0, MPI_INT, prev_rank(), 4,
                 MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_INT, &cnt);
    CHECK(cnt == 0, "zero-size message count %d", cnt);

    MPI_Type_free(&column);
    CHECK(column == MPI_DATATYPE_NULL, "freed handle not MPI_DATATYPE_NULL");
    MPI_Type_free(&hcol);
    MPI_Type_free(&rev);
    MPI_Type_free(&twocols);
    MPI_Type_free(&stripe);
    MPI_Type_free(&empty);
    return finish();
}
