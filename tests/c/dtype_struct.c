/* Struct types: a C struct described member by member (extent = sizeof, padding skipped),
 * arrays of it, MPI_BOTTOM with absolute addresses, a struct of derived types, names. */
#include <stddef.h>
#include "dtype_util.h"

struct particle {
    char tag;
    double pos[3];
    int id;
    short flags;
};

int main(int argc, char **argv) {
    start(&argc, &argv);
    struct particle p[5], q[5];
    int bl[4] = {1, 3, 1, 1};
    MPI_Aint disp[4] = {offsetof(struct particle, tag), offsetof(struct particle, pos),
                        offsetof(struct particle, id), offsetof(struct particle, flags)};
    MPI_Datatype types[4] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT};
    MPI_Datatype pt;
    MPI_Type_create_struct(4, bl, disp, types, &pt);
    MPI_Type_commit(&pt);
    check_extent(pt, 1 + 24 + 4 + 2, 0, sizeof(struct particle), 0,
                 offsetof(struct particle, flags) + 2, "particle");

    memset(p, 0, sizeof p);
    for (int i = 0; i < 5; i++) {
        p[i].tag = 'a' + i;
        for (int k = 0; k < 3; k++) p[i].pos[k] = rank_ + i * 0.5 + k;
        p[i].id = rank_ * 10 + i;
        p[i].flags = (short)(i * 3);
    }
    memset(q, 0x7f, sizeof q);
    MPI_Status st;
    MPI_Sendrecv(p, 5, pt, next_rank(), 0, q, 5, pt, prev_rank(), 0, MPI_COMM_WORLD, &st);
    int n;
    MPI_Get_count(&st, pt, &n);
    CHECK(n == 5, "Get_count(particle) = %d", n);
    MPI_Get_count(&st, MPI_BYTE, &n);
    CHECK(n == 5 * 31, "Get_count(byte) = %d", n);
    MPI_Get_elements(&st, pt, &n);
    CHECK(n == 5 * 6, "Get_elements(particle) = %d", n);
    MPI_Count nx;
    MPI_Get_elements_x(&st, pt, &nx);
    CHECK(nx == 5 * 6, "Get_elements_x(particle) = %ld", (long)nx);
    for (int i = 0; i < 5; i++) {
        CHECK(q[i].tag == 'a' + i, "tag %d", q[i].tag);
        for (int k = 0; k < 3; k++)
            CHECK(q[i].pos[k] == prev_rank() + i * 0.5 + k, "pos %g", q[i].pos[k]);
        CHECK(q[i].id == prev_rank() * 10 + i, "id %d", q[i].id);
        CHECK(q[i].flags == i * 3, "flags %d", q[i].flags);
    }

    /* MPI_BOTTOM: absolute addresses of two unrelated variables. */
    int a = rank_ + 1, ra = 0;
    double b = rank_ * 2.5, rb = 0;
    MPI_Aint abs_disp[2];
    MPI_Get_address(&a, &abs_disp[0]);
    MPI_Get_address(&b, &abs_disp[1]);
    int bl2[2] = {1, 1};
    MPI_Datatype t2[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Datatype sendt, recvt;
    MPI_Type_create_struct(2, bl2, abs_disp, t2, &sendt);
    MPI_Type_commit(&sendt);
    MPI_Get_address(&ra, &abs_disp[0]);
    MPI_Get_address(&rb, &abs_disp[1]);
    MPI_Type_create_struct(2, bl2, abs_disp, t2, &recvt);
    MPI_Type_commit(&recvt);
    MPI_Sendrecv(MPI_BOTTOM, 1, sendt, next_rank(), 1, MPI_BOTTOM, 1, recvt, prev_rank(), 1,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(ra == prev_rank() + 1 && rb == prev_rank() * 2.5, "BOTTOM: %d %g", ra, rb);
    MPI_Aint d = MPI_Aint_diff(abs_disp[1], abs_disp[0]);
    CHECK(MPI_Aint_add(abs_disp[0], d) == abs_disp[1], "Aint_add/diff");

    /* A struct of derived types: two particles' ids via a vector, then a char. */
    MPI_Datatype ids, mixed;
    MPI_Type_create_hvector(2, 1, sizeof(struct particle), MPI_INT, &ids);
    int bl3[2] = {1, 1};
    MPI_Aint d3[2] = {offsetof(struct particle, id), 0};
    MPI_Datatype t3[2] = {ids, MPI_CHAR};
    MPI_Type_create_struct(2, bl3, d3, t3, &mixed);
    MPI_Type_commit(&mixed);
    int sz;
    MPI_Type_size(mixed, &sz);
    CHECK(sz == 9, "mixed size %d", sz);
    char raw[9];
    MPI_Sendrecv(p, 1, mixed, next_rank(), 2, raw, 9, MPI_BYTE, prev_rank(), 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int id0, id1;
    memcpy(&id0, raw, 4);
    memcpy(&id1, raw + 4, 4);
    CHECK(id0 == prev_rank() * 10 && id1 == prev_rank() * 10 + 1 && raw[8] == 'a',
          "mixed: %d %d %c", id0, id1, raw[8]);

    /* Names. */
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Type_get_name(MPI_INT, name, &len);
    CHECK(strcmp(name, "MPI_INT") == 0 && len == 7, "name of MPI_INT: %s", name);
    MPI_Type_get_name(pt, name, &len);
    CHECK(len == 0, "unnamed type has name '%s'", name);
    MPI_Type_set_name(pt, "particle");
    MPI_Type_get_name(pt, name, &len);
    CHECK(strcmp(name, "particle") == 0 && len == 8, "name: %s", name);

    /* The pair types' size excludes padding. */
    MPI_Type_size(MPI_DOUBLE_INT, &sz);
    CHECK(sz == 12, "MPI_DOUBLE_INT size %d", sz);

    MPI_Type_free(&pt);
    MPI_Type_free(&sendt);
    MPI_Type_free(&recvt);
    MPI_Type_free(&ids);
    MPI_Type_free(&mixed);
    return finish();
}
