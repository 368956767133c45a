/* MPI_Pack / MPI_Unpack / MPI_Pack_size: several values packed one after another, sent as
 * MPI_PACKED and unpacked into derived types; overruns are errors. */
#include "dtype_util.h"

int main(int argc, char **argv) {
    start(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int v[12];
    double d[3] = {rank_ + 0.5, rank_ + 1.5, rank_ + 2.5};
    for (int i = 0; i < 12; i++) v[i] = rank_ * 100 + i;
    MPI_Datatype evens;
    MPI_Type_vector(6, 1, 2, MPI_INT, &evens);
    MPI_Type_commit(&evens);

    int s1, s2;
    MPI_Pack_size(1, evens, MPI_COMM_WORLD, &s1);
    MPI_Pack_size(3, MPI_DOUBLE, MPI_COMM_WORLD, &s2);
    CHECK(s1 == 24 && s2 == 24, "Pack_size %d %d", s1, s2);

    char packed[64];
    int pos = 0;
    MPI_Pack(v, 1, evens, packed, sizeof packed, &pos, MPI_COMM_WORLD);
    CHECK(pos == 24, "pos after vector %d", pos);
    MPI_Pack(d, 3, MPI_DOUBLE, packed, sizeof packed, &pos, MPI_COMM_WORLD);
    CHECK(pos == 48, "pos after doubles %d", pos);
    for (int i = 0; i < 6; i++) {
        int x;
        memcpy(&x, packed + 4 * i, 4);
        CHECK(x == v[2 * i], "packed[%d] = %d", i, x);
    }

    /* Overrun: no room for another 24 bytes. */
    int save = pos;
    int rc = MPI_Pack(v, 1, evens, packed, 60, &pos, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS && pos == save, "pack overrun: rc %d pos %d", rc, pos);

    /* Send the packed bytes; the receiver unpacks the vector into the odd slots. */
    char got[64];
    MPI_Status st;
    MPI_Sendrecv(packed, pos, MPI_PACKED, next_rank(), 0, got, sizeof got, MPI_PACKED,
                 prev_rank(), 0, MPI_COMM_WORLD, &st);
    int n;
    MPI_Get_count(&st, MPI_PACKED, &n);
    CHECK(n == 48, "packed count %d", n);
    int w[12];
    double e[3];
    for (int i = 0; i < 12; i++) w[i] = -1;
    pos = 0;
    MPI_Unpack(got, n, &pos, &w[1], 1, evens, MPI_COMM_WORLD);
    MPI_Unpack(got, n, &pos, e, 3, MPI_DOUBLE, MPI_COMM_WORLD);
    CHECK(pos == 48, "pos after unpack %d", pos);
    for (int i = 0; i < 12; i++)
        CHECK(w[i] == (i % 2 ? prev_rank() * 100 + i - 1 : -1), "w[%d] = %d", i, w[i]);
    for (int i = 0; i < 3; i++) CHECK(e[i] == prev_rank() + 0.5 + i, "e[%d] = %g", i, e[i]);
    rc = MPI_Unpack(got, n, &pos, e, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "unpack past the end accepted");

    /* Receive a typed message as MPI_PACKED and unpack it: same bytes. */
    MPI_Sendrecv(v, 1, evens, next_rank(), 1, got, sizeof got, MPI_PACKED, prev_rank(), 1,
                 MPI_COMM_WORLD, &st);
    pos = 0;
    int flat[6];
    MPI_Unpack(got, 24, &pos, flat, 6, MPI_INT, MPI_COMM_WORLD);
    for (int i = 0; i < 6; i++)
        CHECK(flat[i] == prev_rank() * 100 + 2 * i, "flat[%d] = %d", i, flat[i]);

    /* Large-count variants. */
    MPI_Count cpos = 0, csz;
    MPI_Pack_size_c(2, evens, MPI_COMM_WORLD, &csz);
    CHECK(csz == 48, "Pack_size_c %ld", (long)csz);
    MPI_Pack_c(v, 1, evens, packed, 64, &cpos, MPI_COMM_WORLD);
    CHECK(cpos == 24, "Pack_c pos %ld", (long)cpos);
    cpos = 0;
    MPI_Unpack_c(packed, 64, &cpos, flat, 6, MPI_INT, MPI_COMM_WORLD);
    CHECK(cpos == 24 && flat[5] == v[10], "Unpack_c %ld %d", (long)cpos, flat[5]);

    /* Uncommitted types cannot be packed. */
    MPI_Datatype raw;
    MPI_Type_contiguous(2, MPI_INT, &raw);
    pos = 0;
    rc = MPI_Pack(v, 1, raw, packed, 64, &pos, MPI_COMM_WORLD);
    int cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_TYPE, "pack with uncommitted type: class %d", cls);
    MPI_Type_free(&raw);
    MPI_Type_free(&evens);
    return finish();
}
