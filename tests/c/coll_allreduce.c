/* MPI_Allreduce / MPI_Iallreduce: small (recursive doubling, non-power-of-two fix-up) and
 * large (ring) vectors, MPI_IN_PLACE, zero counts, and results bitwise identical on all ranks. */
#include "coll_util.h"
#include <stdint.h>

static void sums(int n) {
    long *in = xmalloc(n * sizeof(long)), *out = xmalloc(n * sizeof(long));
    for (int i = 0; i < n; i++)
        in[i] = (long)rank * 1000 + i;
    MPI_Allreduce(in, out, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += out[i] != 1000L * size * (size - 1) / 2 + (long)size * i;
    CHECK(bad == 0, "long sum n=%d: %d wrong", n, bad);
    /* In place. */
    for (int i = 0; i < n; i++)
        out[i] = rank + i;
    MPI_Allreduce(MPI_IN_PLACE, out, n, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    bad = 0;
    for (int i = 0; i < n; i++)
        bad += out[i] != size - 1 + i;
    CHECK(bad == 0, "in-place max n=%d: %d wrong", n, bad);
    free(in);
    free(out);
}

/* Floats whose sum depends on the order: every rank must still get the same bits. */
static void identical(int n) {
    double *in = xmalloc(n * sizeof(double)), *out = xmalloc(n * sizeof(double)),
           *ref = xmalloc(n * sizeof(double));
    for (int i = 0; i < n; i++)
        in[i] = 1.0 / (rank + 1 + i % 7) + (rank % 3) * 1e-13 * i;
    MPI_Request req;
    MPI_Iallreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    memcpy(ref, out, n * sizeof(double));
    MPI_Bcast(ref, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    CHECK(memcmp(ref, out, n * sizeof(double)) == 0, "double sum n=%d differs from rank 0", n);
    /* And it is reproducible. */
    MPI_Allreduce(in, ref, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    CHECK(memcmp(ref, out, n * sizeof(double)) == 0, "double sum n=%d not reproducible", n);
    double expect0 = 0;
    for (int r = 0; r < size; r++)
        expect0 += 1.0 / (r + 1);
    CHECK(out[0] > expect0 - 1e-9 && out[0] < expect0 + 1e-9, "double sum [0]=%g want %g", out[0], expect0);
    free(in);
    free(out);
    free(ref);
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    int ns[] = {0, 1, 2, 5, 100, 8191, 8192, 8193, 131072, 262144}; /* up to 2 MiB of longs */
    for (int k = 0; k < 10; k++)
        sums(ns[k]);
    identical(3);
    identical(1000);
    identical(131072 + 3); /* 1 MiB + : ring */
    /* Every integer width and unsigned wrap-around. */
    unsigned char uc = 200, ruc;
    MPI_Allreduce(&uc, &ruc, 1, MPI_UNSIGNED_CHAR, MPI_SUM, MPI_COMM_WORLD);
    CHECK(ruc == (unsigned char)(200 * size), "uchar sum %d", ruc);
    int16_t s16 = -rank, r16;
    MPI_Allreduce(&s16, &r16, 1, MPI_INT16_T, MPI_MIN, MPI_COMM_WORLD);
    CHECK(r16 == -(size - 1), "int16 min %d", r16);
    unsigned u = 1u << (rank % 32), ru, eu = 0;
    for (int r = 0; r < size; r++)
        eu |= 1u << (r % 32);
    MPI_Allreduce(&u, &ru, 1, MPI_UNSIGNED, MPI_BOR, MPI_COMM_WORLD);
    CHECK(ru == eu, "unsigned bor");
    float fl[2] = {1.5f, (float)rank}, rfl[2];
    MPI_Allreduce(fl, rfl, 2, MPI_FLOAT, MPI_PROD, MPI_COMM_WORLD);
    float ep = 1;
    for (int r = 0; r < size; r++)
        ep *= 1.5f;
    CHECK(rfl[0] == ep && rfl[1] == (size > 1 ? 0.0f : 0.0f), "float prod %g", rfl[0]);
    return finish();
}
