/* Derived types on the wire: eager and rendezvous (>= 1 MiB) non-contiguous messages, blocking
 * and non-blocking, sent with one type and received with another of the same signature;
 * truncation; a type freed while operations using it are pending; bad and uncommitted types. */
#include "dtype_util.h"

#define BIG (1 << 18) /* doubles per message: 2 MiB of data, every other double of 4 MiB */

static int check_class(int rc, int cls) {
    int got = -1;
    MPI_Error_class(rc, &got);
    return got == cls;
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    /* Large: every other double, a vector of BIG, out; contiguous in. */
    double *src = malloc(2 * BIG * sizeof(double)), *dst = malloc(2 * BIG * sizeof(double));
    for (int i = 0; i < 2 * BIG; i++) src[i] = rank_ * 1e7 + i;
    MPI_Datatype strided;
    MPI_Type_vector(BIG, 1, 2, MPI_DOUBLE, &strided);
    MPI_Type_commit(&strided);
    MPI_Request rq[2];
    MPI_Irecv(dst, BIG, MPI_DOUBLE, prev_rank(), 0, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(src, 1, strided, next_rank(), 0, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    int bad = 0;
    for (int i = 0; i < BIG; i++) bad += dst[i] != prev_rank() * 1e7 + 2 * i;
    CHECK(bad == 0, "strided -> contiguous: %d wrong", bad);

    /* Contiguous out, strided in (odd slots of a cleared buffer): holes stay 0. */
    memset(dst, 0, 2 * BIG * sizeof(double));
    MPI_Sendrecv(src, BIG, MPI_DOUBLE, next_rank(), 1, dst + 1, 1, strided, prev_rank(), 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    bad = 0;
    for (int i = 0; i < 2 * BIG; i++)
        bad += dst[i] != (i % 2 ? prev_rank() * 1e7 + i / 2 : 0);
    CHECK(bad == 0, "contiguous -> strided: %d wrong", bad);

    /* Strided out, a different non-contiguous type in: blocks of 2 doubles every 3. */
    MPI_Datatype threes;
    MPI_Type_vector(BIG / 2, 2, 3, MPI_DOUBLE, &threes);
    MPI_Type_commit(&threes);
    memset(dst, 0, 2 * BIG * sizeof(double));
    MPI_Sendrecv(src, 1, strided, next_rank(), 2, dst, 1, threes, prev_rank(), 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    bad = 0;
    for (int k = 0; k < BIG; k++) {
        int at = (k / 2) * 3 + k % 2;
        bad += dst[at] != prev_rank() * 1e7 + 2 * k;
    }
    CHECK(bad == 0, "strided -> threes: %d wrong", bad);

    /* Freed while pending: the operations keep the type alive. */
    MPI_Datatype tmp;
    MPI_Type_vector(BIG, 1, 2, MPI_DOUBLE, &tmp);
    MPI_Type_commit(&tmp);
    memset(dst, 0, 2 * BIG * sizeof(double));
    MPI_Irecv(dst, 1, tmp, prev_rank(), 3, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(src + 1, 1, tmp, next_rank(), 3, MPI_COMM_WORLD, &rq[1]);
    MPI_Type_free(&tmp);
    CHECK(tmp == MPI_DATATYPE_NULL, "freed handle");
    /* New types may reuse the slot meanwhile. */
    MPI_Datatype other;
    MPI_Type_contiguous(7, MPI_CHAR, &other);
    MPI_Type_commit(&other);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    bad = 0;
    for (int i = 0; i < 2 * BIG; i++)
        bad += dst[i] != (i % 2 ? 0 : prev_rank() * 1e7 + i + 1);
    CHECK(bad == 0, "freed-while-pending: %d wrong", bad);
    MPI_Type_free(&other);

    /* Smaller non-contiguous messages: inline, eager, and just past the eager limit. */
    int counts[4] = {1, 5, 1000, 3000};
    for (int c = 0; c < 4; c++) {
        int n = counts[c];
        MPI_Status st;
        MPI_Datatype sv;
        MPI_Type_vector(n, 1, 2, MPI_DOUBLE, &sv);
        MPI_Type_commit(&sv);
        memset(dst, 0, 2 * n * sizeof(double));
        MPI_Sendrecv(src, 1, sv, next_rank(), 5, dst, 1, sv, prev_rank(), 5, MPI_COMM_WORLD, &st);
        int k;
        MPI_Get_count(&st, sv, &k);
        CHECK(k == 1, "Get_count(vector) = %d", k);
        MPI_Get_count(&st, MPI_DOUBLE, &k);
        CHECK(k == n, "Get_count(double) = %d", k);
        MPI_Get_elements(&st, sv, &k);
        CHECK(k == n, "Get_elements(vector) = %d", k);
        bad = 0;
        for (int i = 0; i < 2 * n - 1; i++) bad += dst[i] != (i % 2 ? 0 : prev_rank() * 1e7 + i);
        CHECK(bad == 0, "eager vector of %d: %d wrong", n, bad);
        MPI_Type_free(&sv);
    }

    /* Truncation into a smaller derived type: the part that fits lands in place. */
    int sizes[2] = {100, BIG};
    for (int s = 0; s < 2; s++) {
        int n = sizes[s];
        MPI_Datatype small;
        MPI_Type_vector(n / 2, 1, 2, MPI_DOUBLE, &small);
        MPI_Type_commit(&small);
        memset(dst, 0, 2 * BIG * sizeof(double));
        MPI_Status st;
        int rc = MPI_Sendrecv(src, n, MPI_DOUBLE, next_rank(), 6, dst, 1, small, prev_rank(), 6,
                              MPI_COMM_WORLD, &st);
        CHECK(check_class(rc, MPI_ERR_TRUNCATE), "truncation of %d: rc %d", n, rc);
        int k;
        MPI_Get_count(&st, small, &k);
        CHECK(k == 1, "Get_count after truncation = %d", k);
        MPI_Get_elements(&st, small, &k);
        CHECK(k == n / 2, "Get_elements after truncation = %d", k);
        bad = 0;
        for (int i = 0; i < n; i++) bad += dst[i] != (i % 2 ? 0 : prev_rank() * 1e7 + i / 2);
        CHECK(bad == 0, "truncated %d: %d wrong", n, bad);
        MPI_Type_free(&small);
    }

    /* A message shorter than one element: Get_count is undefined, Get_elements counts. */
    {
        MPI_Datatype five;
        MPI_Type_vector(5, 1, 2, MPI_DOUBLE, &five);
        MPI_Type_commit(&five);
        MPI_Status st;
        MPI_Sendrecv(src, 3, MPI_DOUBLE, next_rank(), 9, dst, 1, five, prev_rank(), 9,
                     MPI_COMM_WORLD, &st);
        int k;
        MPI_Get_count(&st, five, &k);
        CHECK(k == MPI_UNDEFINED, "Get_count of a partial element = %d", k);
        MPI_Get_elements(&st, five, &k);
        CHECK(k == 3, "Get_elements of a partial element = %d", k);
        CHECK(dst[4] == prev_rank() * 1e7 + 2, "partial element data %g", dst[4]);
        MPI_Type_free(&five);
    }

    /* Zero count of a derived type. */
    MPI_Status st;
    MPI_Sendrecv(NULL, 0, strided, next_rank(), 7, NULL, 0, strided, prev_rank(), 7,
                 MPI_COMM_WORLD, &st);
    int k = -1;
    MPI_Get_count(&st, strided, &k);
    CHECK(k == 0, "zero count: %d", k);

    /* Bad types. */
    MPI_Datatype uncommitted;
    MPI_Type_vector(2, 1, 2, MPI_INT, &uncommitted);
    int rc = MPI_Send(src, 1, uncommitted, next_rank(), 8, MPI_COMM_WORLD);
    CHECK(check_class(rc, MPI_ERR_TYPE), "uncommitted: rc %d", rc);
    rc = MPI_Send(src, 1, MPI_DATATYPE_NULL, next_rank(), 8, MPI_COMM_WORLD);
    CHECK(check_class(rc, MPI_ERR_TYPE), "MPI_DATATYPE_NULL: rc %d", rc);
    rc = MPI_Send(src, 1, (MPI_Datatype)0x12345678, next_rank(), 8, MPI_COMM_WORLD);
    CHECK(check_class(rc, MPI_ERR_TYPE), "bogus handle: rc %d", rc);
    MPI_Datatype freed = strided;
    MPI_Type_free(&strided);
    rc = MPI_Send(src, 1, freed, next_rank(), 8, MPI_COMM_WORLD);
    CHECK(check_class(rc, MPI_ERR_TYPE), "freed type: rc %d", rc);
    MPI_Datatype intt = MPI_INT;
    rc = MPI_Type_free(&intt);
    CHECK(check_class(rc, MPI_ERR_TYPE), "free of MPI_INT: rc %d", rc);
    rc = MPI_Type_contiguous(-1, MPI_INT, &freed);
    CHECK(check_class(rc, MPI_ERR_COUNT), "negative count: rc %d", rc);
    rc = MPI_Type_contiguous(1, MPI_DATATYPE_NULL, &freed);
    CHECK(check_class(rc, MPI_ERR_TYPE), "contiguous of NULL type: rc %d", rc);
    MPI_Type_free(&uncommitted);
    MPI_Type_free(&threes);

    free(src);
    free(dst);
    return finish();
}
