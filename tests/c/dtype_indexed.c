/* Indexed types: indexed, hindexed, indexed_block, hindexed_block, with holes, negative
 * displacements and zero blocklengths; sent around the ring and checked element by element. */
#include "dtype_util.h"

int main(int argc, char **argv) {
    start(&argc, &argv);
    int buf[64], out[64], flat[16];
    for (int i = 0; i < 64; i++) buf[i] = rank_ * 100 + i;

    /* Blocks {2 at 1, 0 at 10, 3 at 7, 1 at 20}: type-map order, not sorted. */
    int bl[4] = {2, 0, 3, 1}, disp[4] = {1, 10, 7, 20};
    MPI_Datatype ix;
    MPI_Type_indexed(4, bl, disp, MPI_INT, &ix);
    MPI_Type_commit(&ix);
    check_extent(ix, 6 * 4, 4, 20 * 4, 4, 20 * 4, "indexed");
    int order[6] = {1, 2, 7, 8, 9, 20};
    MPI_Sendrecv(buf, 1, ix, next_rank(), 0, flat, 6, MPI_INT, prev_rank(), 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < 6; i++)
        CHECK(flat[i] == prev_rank() * 100 + order[i], "indexed[%d] = %d", i, flat[i]);

    /* Receive through the same type: holes stay untouched. */
    for (int i = 0; i < 64; i++) out[i] = -1;
    MPI_Sendrecv(buf, 1, ix, next_rank(), 1, out, 1, ix, prev_rank(), 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    for (int i = 0; i < 64; i++) {
        int in = (i >= 1 && i <= 2) || (i >= 7 && i <= 9) || i == 20;
        CHECK(out[i] == (in ? prev_rank() * 100 + i : -1), "out[%d] = %d", i, out[i]);
    }

    /* hindexed with a negative displacement, used from the middle of the buffer. */
    int hbl[3] = {1, 2, 1};
    MPI_Aint hdisp[3] = {-8 * 4, 0, 5 * 4};
    MPI_Datatype hx;
    MPI_Type_create_hindexed(3, hbl, hdisp, MPI_INT, &hx);
    MPI_Type_commit(&hx);
    check_extent(hx, 16, -32, 24 + 32, -32, 24 + 32, "hindexed");
    /* Two elements: the second is shifted by the extent (14 ints). */
    MPI_Sendrecv(&buf[20], 2, hx, next_rank(), 2, flat, 8, MPI_INT, prev_rank(), 2,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int hwant[8] = {12, 20, 21, 25, 26, 34, 35, 39};
    for (int i = 0; i < 8; i++)
        CHECK(flat[i] == prev_rank() * 100 + hwant[i], "hindexed[%d] = %d, want %d", i, flat[i],
              prev_rank() * 100 + hwant[i]);

    /* indexed_block and hindexed_block. */
    int bdisp[3] = {6, 0, 3};
    MPI_Datatype ib, hb;
    MPI_Type_create_indexed_block(3, 2, bdisp, MPI_INT, &ib);
    MPI_Type_commit(&ib);
    check_extent(ib, 24, 0, 32, 0, 32, "indexed_block");
    MPI_Sendrecv(buf, 1, ib, next_rank(), 3, flat, 6, MPI_INT, prev_rank(), 3, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    int ibwant[6] = {6, 7, 0, 1, 3, 4};
    for (int i = 0; i < 6; i++)
        CHECK(flat[i] == prev_rank() * 100 + ibwant[i], "indexed_block[%d] = %d", i, flat[i]);

    MPI_Aint hbdisp[2] = {40, -4};
    MPI_Type_create_hindexed_block(2, 3, hbdisp, MPI_INT, &hb);
    MPI_Type_commit(&hb);
    check_extent(hb, 24, -4, 56, -4, 56, "hindexed_block");
    MPI_Sendrecv(&buf[1], 1, hb, next_rank(), 4, flat, 6, MPI_INT, prev_rank(), 4,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    int hbwant[6] = {11, 12, 13, 0, 1, 2};
    for (int i = 0; i < 6; i++)
        CHECK(flat[i] == prev_rank() * 100 + hbwant[i], "hindexed_block[%d] = %d", i, flat[i]);

    /* Large-count variants agree. */
    MPI_Count cbl[4] = {2, 0, 3, 1}, cdisp[4] = {1, 10, 7, 20};
    MPI_Datatype ixc;
    MPI_Type_indexed_c(4, cbl, cdisp, MPI_INT, &ixc);
    MPI_Type_commit(&ixc);
    check_extent(ixc, 6 * 4, 4, 20 * 4, 4, 20 * 4, "indexed_c");
    MPI_Count cs;
    MPI_Type_size_c(ixc, &cs);
    CHECK(cs == 24, "Type_size_c %ld", (long)cs);

    MPI_Type_free(&ix);
    MPI_Type_free(&hx);
    MPI_Type_free(&ib);
    MPI_Type_free(&hb);
    MPI_Type_free(&ixc);
    return finish();
}
