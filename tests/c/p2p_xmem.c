/* Rendezvous between MPI_Alloc_mem buffers, which come from each rank's node-shared memory
 * source (btl_sm_xmem) and are read by the receiver with memcpy: every byte checked.
 *   1. a ring (every rank sends right and receives from the left at once, so at np 2 both
 *      directions run together), 1 KiB to 8 MiB, each side Alloc_mem or malloc;
 *   2. Ssend from small Alloc_mem buffers (always rendezvous);
 *   3. a non-contiguous receive type (the receiver reads in chunks and scatters);
 *   4. many alloc/free cycles: freed blocks are reused while the peers keep the source mapped;
 *   5. bad arguments: negative and impossible sizes, and (with the argument "shared", when the
 *      blocks come from the shared source) MPI_Free_mem of an interior pointer. */
#include "p2p_common.h"
#include <stdint.h>

static unsigned char val(size_t i, unsigned seed) {
    return (unsigned char)(i * 131u + seed * 7u + (i >> 12));
}

static void fill(unsigned char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++) b[i] = val(i, seed);
}

static size_t bad_at(const unsigned char *b, size_t n, unsigned seed) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != val(i, seed)) return i;
    return (size_t)-1;
}

static unsigned char *get(size_t n, int shared) {
    void *p = NULL;
    if (shared) MPI_Alloc_mem((MPI_Aint)n, MPI_INFO_NULL, &p);
    else p = malloc(n);
    return p;
}

static void put(unsigned char *p, int shared) {
    if (shared) MPI_Free_mem(p);
    else free(p);
}

/* Send n bytes right, receive n bytes from the left; the buffers' kinds as given. */
static void ring(int rank, int size, size_t n, int sshared, int rshared, unsigned seed,
                 int sync) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *s = get(n, sshared), *r = get(n, rshared);
    MPI_Request q[2];
    fill(s, n, seed + (unsigned)rank);
    memset(r, 0, n);
    MPI_Irecv(r, (int)n, MPI_BYTE, left, 7, MPI_COMM_WORLD, &q[0]);
    if (sync) MPI_Issend(s, (int)n, MPI_BYTE, right, 7, MPI_COMM_WORLD, &q[1]);
    else MPI_Isend(s, (int)n, MPI_BYTE, right, 7, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    size_t at = bad_at(r, n, seed + (unsigned)left);
    CHECK(at == (size_t)-1, "ring of %zu bytes (send %s, receive %s): first bad byte %zd", n,
          sshared ? "Alloc_mem" : "malloc", rshared ? "Alloc_mem" : "malloc", (ssize_t)at);
    put(s, sshared);
    put(r, rshared);
}

/* A contiguous Alloc_mem send into a vector receive (48 of every 64 bytes). */
static void strided(int rank, int size, size_t blocks, unsigned seed) {
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    size_t n = blocks * 48;
    unsigned char *s = get(n, 1), *r = get(blocks * 64, 1);
    MPI_Datatype vec;
    MPI_Type_vector((int)blocks, 48, 64, MPI_BYTE, &vec);
    MPI_Type_commit(&vec);
    fill(s, n, seed + (unsigned)rank);
    memset(r, 0xee, blocks * 64);
    MPI_Request q[2];
    MPI_Irecv(r, 1, vec, left, 8, MPI_COMM_WORLD, &q[0]);
    MPI_Isend(s, (int)n, MPI_BYTE, right, 8, MPI_COMM_WORLD, &q[1]);
    MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
    size_t bad = 0;
    for (size_t i = 0; i < blocks * 64; i++) {
        size_t b = i / 64, k = i % 64;
        unsigned char want = k < 48 ? val(b * 48 + k, seed + (unsigned)left) : 0xee;
        if (r[i] != want && bad++ == 0)
            CHECK(0, "vector receive of %zu blocks: byte %zu is %d, expected %d", blocks, i, r[i],
                  want);
    }
    MPI_Type_free(&vec);
    put(s, 1);
    put(r, 1);
}

int main(int argc, char **argv) {
    static const size_t sizes[] = {1024, 4096, 16385, 65536, 262144 + 5, 1048576, 8388608};
    const int nsizes = sizeof sizes / sizeof sizes[0];
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* 1. every size, every pairing of buffer kinds, both directions at once. */
    for (int s = 0; s < nsizes; s++)
        for (int kind = 0; kind < 4; kind++)
            ring(rank, size, sizes[s], kind & 1, kind >> 1, (unsigned)(s * 4 + kind), 0);

    /* 2. Ssend is always a rendezvous, even from a 4 KiB Alloc_mem buffer. */
    for (int s = 0; s < 4; s++) ring(rank, size, sizes[s], 1, 1, 50u + (unsigned)s, 1);

    /* 3. non-contiguous receives: within one chunk of the receiver's reads and over many. */
    strided(rank, size, 1000, 60);
    strided(rank, size, 40000, 61);

    /* 4. alloc/free cycles: sizes change, so blocks are split, merged and reused. */
    for (int i = 0; i < 60; i++) {
        size_t n = 65536 + (size_t)((i * 7919) % 40) * 32768 + (size_t)i;
        ring(rank, size, n, 1, i % 3 != 0, 100u + (unsigned)i, i % 5 == 0);
        /* Keep one block alive across cycles now and then, so later ones land elsewhere. */
        static unsigned char *keep = NULL;
        if (i % 7 == 3) {
            if (keep) MPI_Free_mem(keep);
            MPI_Alloc_mem((MPI_Aint)(n / 2), MPI_INFO_NULL, &keep);
            memset(keep, 1, n / 2);
        }
        if (i == 59 && keep) MPI_Free_mem(keep);
    }

    /* 5. bad arguments give an error class, not a crash. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    {
        void *p = NULL;
        int rc, cls;
        rc = MPI_Alloc_mem(-1, MPI_INFO_NULL, &p);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_ARG, "MPI_Alloc_mem(-1): class %d", cls);
        rc = MPI_Alloc_mem((MPI_Aint)(INTPTR_MAX / 2), MPI_INFO_NULL, &p);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_NO_MEM, "MPI_Alloc_mem(huge): class %d", cls);
        rc = MPI_Alloc_mem(1 << 20, MPI_INFO_NULL, &p);
        CHECK(rc == MPI_SUCCESS, "MPI_Alloc_mem(1 MiB): %d", rc);
        if (argc > 1 && strcmp(argv[1], "shared") == 0) {
            rc = MPI_Free_mem((char *)p + 4096);
            CHECK(rc != MPI_SUCCESS, "MPI_Free_mem of an interior pointer succeeded");
        }
        rc = MPI_Free_mem(p);
        CHECK(rc == MPI_SUCCESS, "MPI_Free_mem: %d", rc);
        rc = MPI_Free_mem(NULL);
        CHECK(rc == MPI_SUCCESS, "MPI_Free_mem(NULL): %d", rc);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    return finish();
}
