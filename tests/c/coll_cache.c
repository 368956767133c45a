/* Blocking collectives repeated with the same arguments reuse their schedule (coll/cache.rs):
 * new buffer contents every call, a datatype, an op and a communicator freed and replaced by
 * others that may get the same handle or slot, MPI_IN_PLACE beside a send buffer, more
 * distinct calls than the cache holds, and a truncation error that must not stick. */
#include "coll_util.h"

static void sum_ints(void *in, void *inout, int *len, MPI_Datatype *dt) {
    for (int i = 0; i < *len; i++) ((int *)inout)[i] += ((int *)in)[i];
}
static void max_ints(void *in, void *inout, int *len, MPI_Datatype *dt) {
    for (int i = 0; i < *len; i++)
        if (((int *)in)[i] > ((int *)inout)[i]) ((int *)inout)[i] = ((int *)in)[i];
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    int in[8], out[8];

    /* Same call, new data each time. */
    for (int it = 0; it < 50; it++) {
        for (int i = 0; i < 8; i++) in[i] = rank * 100 + i + it;
        MPI_Allreduce(in, out, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 8; i++)
            CHECK(out[i] == 100 * size * (size - 1) / 2 + size * (i + it), "allreduce it %d [%d] = %d", it, i, out[i]);
        int root = it % size, b = rank == root ? it * 7 : -1;
        MPI_Bcast(&b, 1, MPI_INT, root, MPI_COMM_WORLD);
        CHECK(b == it * 7, "bcast it %d: %d", it, b);
        /* In place beside the send-buffer form of the same collective. */
        for (int i = 0; i < 8; i++) out[i] = rank + it;
        MPI_Allreduce(MPI_IN_PLACE, out, 8, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        CHECK(out[0] == size - 1 + it, "in place it %d: %d", it, out[0]);
        /* More distinct calls than the cache keeps (four). */
        for (int k = 0; k < 6; k++) {
            int r = -1;
            MPI_Reduce(&k, &r, 1, MPI_INT, MPI_SUM, k % size, MPI_COMM_WORLD);
            if (rank == k % size) CHECK(r == k * size, "reduce k %d: %d", k, r);
        }
    }

    /* A derived type freed and replaced by another of another shape, same count: the new one
     * may get the same handle, and the call then has the same arguments. */
    for (int it = 0; it < 6; it++) {
        MPI_Datatype t;
        int vec = it % 2, din[16], dout[16];
        if (vec)
            MPI_Type_vector(2, 1, 2, MPI_INT, &t); /* ints 0 and 2 of every 3 */
        else
            MPI_Type_contiguous(2, MPI_INT, &t);
        MPI_Type_commit(&t);
        for (int i = 0; i < 16; i++) din[i] = rank + i, dout[i] = -7;
        MPI_Allreduce(din, dout, 3, t, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < 9; i++) {
            int used = vec ? i % 3 != 1 : i < 6;
            int want = used ? size * (size - 1) / 2 + size * i : -7;
            CHECK(dout[i] == want, "type it %d [%d] = %d, want %d", it, i, dout[i], want);
        }
        MPI_Type_free(&t);
    }

    /* A user op freed and replaced by another. */
    for (int it = 0; it < 4; it++) {
        MPI_Op op;
        MPI_Op_create(it % 2 ? max_ints : sum_ints, 1, &op);
        in[0] = rank + 1;
        MPI_Allreduce(in, out, 1, MPI_INT, op, MPI_COMM_WORLD);
        int want = it % 2 ? size : size * (size + 1) / 2;
        CHECK(out[0] == want, "op it %d: %d, want %d", it, out[0], want);
        MPI_Op_free(&op);
    }

    /* A communicator freed and another (other ranks, other order) in its place. */
    for (int it = 0; it < 4; it++) {
        MPI_Comm c;
        int color = it % 2 ? rank % 2 : 0, key = it % 2 ? rank : -rank;
        MPI_Comm_split(MPI_COMM_WORLD, color, key, &c);
        int cr, cs;
        MPI_Comm_rank(c, &cr);
        MPI_Comm_size(c, &cs);
        in[0] = rank;
        MPI_Allreduce(in, out, 1, MPI_INT, MPI_SUM, c);
        int want = 0;
        for (int r = 0; r < size; r++)
            if ((it % 2 ? r % 2 : 0) == color) want += r;
        CHECK(out[0] == want, "comm it %d: %d, want %d", it, out[0], want);
        int b = cr == 0 ? rank : -1;
        MPI_Bcast(&b, 1, MPI_INT, 0, c);
        CHECK(cr != 0 || b == rank, "comm bcast it %d", it);
        MPI_Comm_free(&c);
    }

    /* A truncating receive fails, and the same call with a buffer that fits then works (two
     * ranks: a tree would forward the truncated data to ranks that expect it whole). */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size == 2) {
        int big[4] = {1, 2, 3, 4}, got[4] = {0};
        for (int it = 0; it < 3; it++) {
            int cnt = rank == 0 ? 4 : (it == 1 ? 2 : 4);
            int rc = MPI_Bcast(rank == 0 ? big : got, cnt, MPI_INT, 0, MPI_COMM_WORLD);
            if (rank != 0 && it == 1) CHECK(rc != MPI_SUCCESS, "truncated bcast succeeded");
            if (rank != 0 && it != 1) CHECK(rc == MPI_SUCCESS && got[3] == 4, "bcast it %d rc %d", it, rc);
            MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    return finish();
}
