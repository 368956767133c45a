/* MPI-IO: explicit offsets, a strided view written collectively, shared and ordered file
 * pointers, collective and non-blocking reads, split collectives, sizes, short reads at the
 * end of the file, amode and access errors, delete, delete-on-close, unsupported data
 * representations, user error handlers (a file's, MPI_FILE_NULL's); and nothing left behind in the (private) directory. */
#include "coll_util.h"
#include <dirent.h>
#include <unistd.h>

static char dir[256], path[300];

static int eclass(int rc) {
    int c;
    MPI_Error_class(rc, &c);
    return c;
}

static int entries(const char *d) {
    DIR *p = opendir(d);
    struct dirent *e;
    int n = 0;
    if (!p)
        return -1;
    while ((e = readdir(p)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            n++;
    closedir(p);
    return n;
}

static int extent_fn(MPI_Datatype t, MPI_Aint *extent, void *extra) {
    MPI_Aint lb;
    (void)extra;
    return MPI_Type_get_extent(t, &lb, extent);
}

static int conv_fn(void *buf, MPI_Datatype t, int count, void *fbuf, MPI_Offset pos, void *extra) {
    (void)buf, (void)t, (void)count, (void)fbuf, (void)pos, (void)extra;
    return MPI_SUCCESS;
}

static void explicit_offsets(void) {
    MPI_File fh;
    int buf[10], in[10], rc, i, count;
    MPI_Status st;
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "open: %d", rc);
    for (i = 0; i < 10; i++)
        buf[i] = rank * 100 + i;
    rc = MPI_File_write_at(fh, rank * 40, buf, 10, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_at: %d", rc);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == 10, "write_at count %d", count);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    int peer = (rank + 1) % size;
    rc = MPI_File_read_at(fh, peer * 40, in, 10, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "read_at: %d", rc);
    for (i = 0; i < 10; i++)
        CHECK(in[i] == peer * 100 + i, "read_at [%d] = %d", i, in[i]);
    /* Collective read of the same. */
    memset(in, 0, sizeof in);
    rc = MPI_File_read_at_all(fh, peer * 40, in, 10, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS && in[9] == peer * 100 + 9, "read_at_all: %d", rc);
    /* Individual pointer: seek, read, position. */
    MPI_Offset pos;
    MPI_File_seek(fh, peer * 40 + 8, MPI_SEEK_SET);
    rc = MPI_File_read(fh, in, 2, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS && in[0] == peer * 100 + 2 && in[1] == peer * 100 + 3, "read");
    MPI_File_get_position(fh, &pos);
    CHECK(pos == peer * 40 + 16, "position %lld", (long long)pos);
    /* Short read at the end of the file. */
    MPI_Offset fsize;
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == 40 * size, "size %lld", (long long)fsize);
    rc = MPI_File_read_at(fh, fsize - 8, in, 10, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == 2, "short read: rc %d count %d", rc, count);
    MPI_File_seek(fh, 0, MPI_SEEK_END);
    MPI_File_get_position(fh, &pos);
    CHECK(pos == fsize, "seek end: %lld", (long long)pos);
    /* Non-blocking forms complete (after everyone has seen the old size). */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request req;
    int v = 7 + rank;
    rc = MPI_File_iwrite_at(fh, fsize + 4 * rank, &v, 1, MPI_INT, &req);
    CHECK(rc == MPI_SUCCESS, "iwrite_at: %d", rc);
    MPI_Wait(&req, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    rc = MPI_File_iread_at(fh, fsize + 4 * peer, &v, 1, MPI_INT, &req);
    MPI_Wait(&req, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(v == 7 + peer && count == 1, "iread_at: %d count %d", v, count);
    /* Split collective. */
    rc = MPI_File_read_at_all_begin(fh, 0, in, 10, MPI_INT);
    CHECK(rc == MPI_SUCCESS, "read_at_all_begin %d", rc);
    rc = MPI_File_read_at_all_end(fh, in, &st);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(rc == MPI_SUCCESS && count == 10 && in[3] == 3, "read_at_all_end");
    rc = MPI_File_read_all_end(fh, in, &st);
    CHECK(eclass(rc) != MPI_SUCCESS, "end without begin succeeded");
    /* Sizes. */
    MPI_File_set_size(fh, 1000);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == 1000, "set_size %lld", (long long)fsize);
    MPI_File_preallocate(fh, 500);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == 1000, "preallocate shrank: %lld", (long long)fsize);
    MPI_File_preallocate(fh, 2000);
    MPI_File_get_size(fh, &fsize);
    CHECK(fsize == 2000, "preallocate %lld", (long long)fsize);
    /* Group, amode, atomicity, info. */
    MPI_Group g, wg;
    int cmp, amode, flag;
    MPI_File_get_group(fh, &g);
    MPI_Comm_group(MPI_COMM_WORLD, &wg);
    MPI_Group_compare(g, wg, &cmp);
    CHECK(cmp == MPI_IDENT, "group compare %d", cmp);
    MPI_Group_free(&g);
    MPI_Group_free(&wg);
    MPI_File_get_amode(fh, &amode);
    CHECK(amode == (MPI_MODE_RDWR | MPI_MODE_CREATE), "amode %d", amode);
    MPI_File_set_atomicity(fh, 1);
    MPI_File_get_atomicity(fh, &flag);
    CHECK(flag == 1, "atomicity");
    MPI_Info info;
    rc = MPI_File_get_info(fh, &info);
    CHECK(rc == MPI_SUCCESS, "get_info");
    MPI_Info_free(&info);
    /* external32: big-endian in the file, native in memory, converted per element (MPICH's
     * io/external32_derived_dtype); types whose external32 size differs (MPI_LONG: 8 bytes
     * here, 4 there) are refused. */
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "external32: %d", rc);
    {
        int ev[3] = {0x01020304, -2, rank}, back[3] = {0, 0, 0};
        unsigned char raw[12];
        MPI_Offset at = 400 + 3 * (MPI_Offset)rank;
        rc = MPI_File_write_at(fh, at, ev, 3, MPI_INT, &st);
        CHECK(rc == MPI_SUCCESS, "external32 write: %d", rc);
        rc = MPI_File_read_at(fh, at, back, 3, MPI_INT, &st);
        CHECK(rc == MPI_SUCCESS && back[0] == ev[0] && back[1] == -2 && back[2] == rank,
              "external32 read back: %d %x %d %d", rc, back[0], back[1], back[2]);
        MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
        rc = MPI_File_read_at(fh, 4 * at, raw, 12, MPI_BYTE, &st);
        CHECK(rc == MPI_SUCCESS && raw[0] == 1 && raw[1] == 2 && raw[2] == 3 && raw[3] == 4 &&
              raw[4] == 0xff && raw[7] == 0xfe && raw[11] == (unsigned char)rank,
              "external32 bytes in the file: %d %02x %02x %02x %02x", rc, raw[0], raw[1], raw[2], raw[3]);
        rc = MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL);
        CHECK(eclass(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "external32 view of MPI_LONG: %d", eclass(rc));
    }
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "nonsense", MPI_INFO_NULL);
    CHECK(eclass(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "bad datarep: %d", eclass(rc));
    /* Registered representations: without conversion functions they move bytes as native. */
    rc = MPI_Register_datarep("rmpi-raw", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_fn, NULL);
    CHECK(rc == MPI_SUCCESS, "register %d", rc);
    rc = MPI_Register_datarep("rmpi-raw", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_fn, NULL);
    CHECK(eclass(rc) == MPI_ERR_DUP_DATAREP, "register twice: %d", eclass(rc));
    rc = MPI_Register_datarep("native", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, extent_fn, NULL);
    CHECK(eclass(rc) == MPI_ERR_DUP_DATAREP, "register native: %d", eclass(rc));
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "rmpi-raw", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "view with rmpi-raw: %d", rc);
    rc = MPI_File_read_at(fh, peer * 10, in, 1, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS && in[0] == peer * 100, "read through rmpi-raw: %d", in[0]);
    rc = MPI_Register_datarep("rmpi-conv", conv_fn, conv_fn, extent_fn, NULL);
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "rmpi-conv", MPI_INFO_NULL);
    CHECK(eclass(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "view with conversions: %d", eclass(rc));
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    MPI_Errhandler eh;
    MPI_File_get_errhandler(fh, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "file default handler");
    MPI_File_close(&fh);
    CHECK(fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        rc = MPI_File_delete(path, MPI_INFO_NULL);
        CHECK(rc == MPI_SUCCESS, "delete %d", rc);
        rc = MPI_File_delete(path, MPI_INFO_NULL);
        CHECK(eclass(rc) == MPI_ERR_NO_SUCH_FILE, "delete again: %d", eclass(rc));
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Each rank owns every size-th pair of ints: a resized contiguous filetype at disp rank*8. */
static void strided_view(void) {
    MPI_File fh;
    MPI_Datatype pair, ftype;
    int buf[8], all[64], i, rc, et;
    MPI_Status st;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    MPI_Type_create_resized(pair, 0, 8 * size, &ftype);
    MPI_Type_commit(&ftype);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    rc = MPI_File_set_view(fh, rank * 8, MPI_INT, ftype, "native", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "set_view %d", rc);
    for (i = 0; i < 8; i++)
        buf[i] = rank * 1000 + i;
    rc = MPI_File_write_all(fh, buf, 8, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_all %d", rc);
    MPI_Offset off;
    MPI_File_get_byte_offset(fh, 2, &off);
    CHECK(off == rank * 8 + 8 * size, "byte offset %lld", (long long)off);
    MPI_Offset disp;
    MPI_Datatype e, f;
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_File_get_view(fh, &disp, &e, &f, rep);
    CHECK(disp == rank * 8 && e == MPI_INT && !strcmp(rep, "native"), "get_view");
    MPI_Type_size(f, &et);
    CHECK(et == 8, "view filetype size %d", et);
    MPI_Type_free(&f);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    /* Read back through the view (collectively), then the whole file as bytes. */
    memset(buf, 0, sizeof buf);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    rc = MPI_File_read_all(fh, buf, 8, MPI_INT, &st);
    for (i = 0; i < 8; i++)
        CHECK(buf[i] == rank * 1000 + i, "read_all [%d] = %d", i, buf[i]);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    rc = MPI_File_read_at(fh, 0, all, 8 * size, MPI_INT, &st);
    for (i = 0; i < 8 * size; i++) {
        int block = i / 2, owner = block % size, k = block / size;
        CHECK(all[i] == owner * 1000 + k * 2 + i % 2, "file int %d = %d", i, all[i]);
    }
    MPI_File_close(&fh);
    MPI_Type_free(&ftype);
    MPI_Type_free(&pair);
    /* Delete on close removed it. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(access(path, F_OK) != 0, "the file survived MPI_MODE_DELETE_ON_CLOSE");
}

static void shared_pointers(void) {
    MPI_File fh;
    int v = rank, rc, i, n = size * (size + 1) / 2;
    int *all = calloc(size + n, sizeof(int));
    MPI_Status st;
    MPI_Offset pos;
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    rc = MPI_File_write_shared(fh, &v, 1, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_shared %d", rc);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_get_position_shared(fh, &pos);
    CHECK(pos == size, "shared position %lld", (long long)pos);
    /* Ordered: rank r writes r + 1 copies of r, after everyone's shared writes. */
    int mine[64];
    for (i = 0; i <= rank; i++)
        mine[i] = rank;
    rc = MPI_File_write_ordered(fh, mine, rank + 1, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_ordered %d", rc);
    MPI_File_get_position_shared(fh, &pos);
    CHECK(pos == size + n, "after ordered %lld", (long long)pos);
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_read_at(fh, 0, all, size + n, MPI_INT, &st);
    int seen = 0;
    for (i = 0; i < size; i++)
        seen |= 1 << all[i];
    CHECK(seen == (1 << size) - 1, "shared writes: mask %x", seen);
    int at = size;
    for (int r = 0; r < size; r++)
        for (i = 0; i <= r; i++, at++)
            CHECK(all[at] == r, "ordered int %d = %d", at, all[at]);
    /* Read them back in order: seek_shared is collective. */
    MPI_File_seek_shared(fh, size, MPI_SEEK_SET);
    memset(mine, -1, sizeof mine);
    rc = MPI_File_read_ordered(fh, mine, rank + 1, MPI_INT, &st);
    for (i = 0; i <= rank; i++)
        CHECK(mine[i] == rank, "read_ordered [%d] = %d", i, mine[i]);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    rc = MPI_File_read_ordered_begin(fh, &v, 1, MPI_INT);
    rc = MPI_File_read_ordered_end(fh, &v, &st);
    CHECK(rc == MPI_SUCCESS, "read_ordered_end %d", rc);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_END);
    MPI_File_get_position_shared(fh, &pos);
    CHECK(pos == size + n, "seek_shared end %lld", (long long)pos);
    MPI_File_close(&fh);
    free(all);
}

static int handler_calls, handler_code;
static MPI_File handler_file;

static void file_handler(MPI_File *f, int *code, ...) {
    handler_calls++;
    handler_file = *f;
    handler_code = *code;
}

/* User error handlers on a file and on MPI_FILE_NULL (the one open errors go through). */
static void handlers(void) {
    MPI_File fh;
    MPI_Errhandler eh, got;
    MPI_Status st;
    int rc, v = 0;
    MPI_File_create_errhandler(file_handler, &eh);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    MPI_File_set_errhandler(fh, eh);
    MPI_File_get_errhandler(fh, &got);
    CHECK(got == eh, "get_errhandler gave another handler");
    MPI_Errhandler_free(&got);
    rc = MPI_File_read_at(fh, -1, &v, 1, MPI_INT, &st);
    CHECK(eclass(rc) == MPI_ERR_ARG && handler_calls == 1 && handler_file == fh &&
              eclass(handler_code) == MPI_ERR_ARG,
          "file handler: rc %d calls %d code %d", rc, handler_calls, handler_code);
    MPI_File_call_errhandler(fh, MPI_ERR_OTHER);
    CHECK(handler_calls == 2 && handler_code == MPI_ERR_OTHER, "call_errhandler: %d", handler_calls);
    MPI_File_close(&fh);
    MPI_File_set_errhandler(MPI_FILE_NULL, eh);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(eclass(rc) == MPI_ERR_NO_SUCH_FILE && handler_calls == 3 && handler_file == MPI_FILE_NULL,
          "FILE_NULL handler: rc %d calls %d", eclass(rc), handler_calls);
    MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&eh);
}

static void errors(void) {
    MPI_File fh;
    int rc, v = 1;
    MPI_Status st;
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(eclass(rc) == MPI_ERR_AMODE, "RDONLY|CREATE: %d", eclass(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    CHECK(eclass(rc) == MPI_ERR_AMODE, "RDWR|WRONLY: %d", eclass(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    CHECK(eclass(rc) == MPI_ERR_AMODE, "no access mode: %d", eclass(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(eclass(rc) == MPI_ERR_NO_SUCH_FILE, "missing file: %d", eclass(rc));
    /* Make it, then EXCL must fail, and the access modes hold. */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
    rc = MPI_File_read_at(fh, 0, &v, 1, MPI_INT, &st);
    CHECK(eclass(rc) == MPI_ERR_ACCESS, "read of WRONLY: %d", eclass(rc));
    MPI_File_close(&fh);
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL, MPI_INFO_NULL, &fh);
    CHECK(eclass(rc) == MPI_ERR_FILE_EXISTS, "EXCL: %d", eclass(rc));
    rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "RDONLY open %d", rc);
    rc = MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st);
    CHECK(eclass(rc) == MPI_ERR_READ_ONLY, "write of RDONLY: %d", eclass(rc));
    MPI_File_close(&fh);
    rc = MPI_File_close(&fh);
    CHECK(eclass(rc) == MPI_ERR_FILE, "close of FILE_NULL: %d", eclass(rc));
    MPI_Barrier(MPI_COMM_WORLD);
    /* Sequential files take shared pointers only. */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY | MPI_MODE_CREATE | MPI_MODE_SEQUENTIAL | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    rc = MPI_File_write_at(fh, 0, &v, 1, MPI_INT, &st);
    CHECK(eclass(rc) == MPI_ERR_UNSUPPORTED_OPERATION, "write_at on sequential: %d", eclass(rc));
    rc = MPI_File_write_ordered(fh, &v, 1, MPI_INT, &st);
    CHECK(rc == MPI_SUCCESS, "write_ordered on sequential: %d", rc);
    MPI_File_close(&fh);
    /* A bad argument at one process fails a collective call everywhere, without a hang. */
    rc = MPI_File_open(MPI_COMM_WORLD, rank == size - 1 ? NULL : path, MPI_MODE_RDWR | MPI_MODE_CREATE,
                       MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS && fh == MPI_FILE_NULL, "open with a NULL name at one process: %d", rc);
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, rank == size - 1 ? "nonsense" : "native", MPI_INFO_NULL);
    CHECK(eclass(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "one bad datarep: %d", eclass(rc));
    if (size > 1) {
        rc = MPI_File_set_size(fh, rank);
        CHECK(eclass(rc) == MPI_ERR_NOT_SAME, "different sizes: %d", eclass(rc));
        rc = MPI_File_set_view(fh, 0, rank ? MPI_INT : MPI_SHORT, rank ? MPI_INT : MPI_SHORT, "native", MPI_INFO_NULL);
        CHECK(eclass(rc) == MPI_ERR_NOT_SAME, "different etype sizes: %d", eclass(rc));
    }
    rc = MPI_File_set_size(fh, rank == 0 ? -1 : 10);
    CHECK(rc != MPI_SUCCESS, "a negative size at rank 0 passed");
    rc = MPI_File_write_ordered(fh, &v, rank == 0 ? -1 : 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS, "an ordered write with a negative count at rank 0 passed");
    MPI_File_close(&fh);
    /* MPI_FILE_NULL's handler is what open errors go through. */
    MPI_Errhandler eh;
    MPI_File_get_errhandler(MPI_FILE_NULL, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "FILE_NULL handler");
}

int main(int argc, char **argv) {
    start(&argc, &argv);
    if (rank == 0) {
        snprintf(dir, sizeof dir, "%s/rmpi-io-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(dir))
            dir[0] = 0;
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    snprintf(path, sizeof path, "%s/data", dir);
    explicit_offsets();
    strided_view();
    shared_pointers();
    errors();
    MPI_Barrier(MPI_COMM_WORLD);
    handlers();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int n = entries(dir);
        CHECK(n == 0, "%d entries left in %s", n, dir);
        rmdir(dir);
    }
    return finish();
}
