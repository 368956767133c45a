/* Resized types: lb/extent set explicitly (also negative lb and extents smaller than the data),
 * interleaving through count > 1, resized inside other constructors, and Type_dup. */
#include "dtype_util.h"

int main(int argc, char **argv) {
    start(&argc, &argv);
    int buf[40], flat[40];
    for (int i = 0; i < 40; i++) buf[i] = rank_ * 100 + i;

    /* An int with extent 3 ints: count 5 picks every third int. */
    MPI_Datatype every3;
    MPI_Type_create_resized(MPI_INT, 0, 3 * sizeof(int), &every3);
    MPI_Type_commit(&every3);
    check_extent(every3, 4, 0, 12, 0, 4, "every3");
    MPI_Sendrecv(buf, 5, every3, next_rank(), 0, flat, 5, MPI_INT, prev_rank(), 0,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 5; i++)
        CHECK(flat[i] == prev_rank() * 100 + 3 * i, "every3[%d] = %d", i, flat[i]);

    /* Negative lb: lb -8, extent 20; the data sits at 0..4 within it. */
    MPI_Datatype neg;
    MPI_Type_create_resized(MPI_INT, -8, 20, &neg);
    MPI_Type_commit(&neg);
    check_extent(neg, 4, -8, 20, 0, 4, "neg lb");
    MPI_Sendrecv(&buf[2], 3, neg, next_rank(), 1, flat, 3, MPI_INT, prev_rank(), 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < 3; i++)
        CHECK(flat[i] == prev_rank() * 100 + 2 + 5 * i, "neg[%d] = %d", i, flat[i]);

    /* A column type resized to one element: count N gives N consecutive columns
     * (the classic matrix transpose trick). 4x4 matrix. */
    int m[4][4], t[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) m[i][j] = rank_ * 100 + i * 4 + j;
    MPI_Datatype col, col1;
    MPI_Type_vector(4, 1, 4, MPI_INT, &col);
    MPI_Type_create_resized(col, 0, sizeof(int), &col1);
    MPI_Type_commit(&col1);
    check_extent(col1, 16, 0, 4, 0, 13 * 4, "col1");
    MPI_Sendrecv(m, 4, col1, next_rank(), 2, t, 16, MPI_INT, prev_rank(), 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            CHECK(t[i][j] == prev_rank() * 100 + j * 4 + i, "t[%d][%d] = %d", i, j, t[i][j]);

    /* Resized inside a contiguous: the extent decides element placement. */
    MPI_Datatype pair, pairs;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 5 * sizeof(int), &pairs);
    MPI_Datatype three;
    MPI_Type_contiguous(3, pairs, &three);
    MPI_Type_commit(&three);
    check_extent(three, 24, 0, 60, 0, 48, "three pairs");
    MPI_Sendrecv(buf, 1, three, next_rank(), 3, flat, 6, MPI_INT, prev_rank(), 3,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int want3[6] = {0, 1, 5, 6, 10, 11};
    for (int i = 0; i < 6; i++)
        CHECK(flat[i] == prev_rank() * 100 + want3[i], "three[%d] = %d", i, flat[i]);

    /* Dup keeps layout and commit state. */
    MPI_Datatype d;
    MPI_Type_dup(three, &d);
    check_extent(d, 24, 0, 60, 0, 48, "dup");
    MPI_Sendrecv(buf, 1, d, next_rank(), 4, flat, 6, MPI_INT, prev_rank(), 4, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < 6; i++)
        CHECK(flat[i] == prev_rank() * 100 + want3[i], "dup[%d] = %d", i, flat[i]);

    /* Large-count queries. */
    MPI_Count lb, ext;
    MPI_Type_get_extent_x(neg, &lb, &ext);
    CHECK(lb == -8 && ext == 20, "extent_x %ld %ld", (long)lb, (long)ext);
    MPI_Type_get_true_extent_c(neg, &lb, &ext);
    CHECK(lb == 0 && ext == 4, "true_extent_c %ld %ld", (long)lb, (long)ext);

    MPI_Type_free(&every3);
    MPI_Type_free(&neg);
    MPI_Type_free(&col);
    MPI_Type_free(&col1);
    MPI_Type_free(&pair);
    MPI_Type_free(&pairs);
    MPI_Type_free(&three);
    MPI_Type_free(&d);
    return finish();
}
