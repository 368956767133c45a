/* The MPI 5.0 ABI's introspection calls: MPI_Abi_get_info gives the sizes of MPI_Aint,
 * MPI_Count and MPI_Offset; there is no Fortran information until a Fortran layer sets it
 * (MPI_Abi_set_fortran_info / _booleans), then the getters give it back; bad arguments are
 * MPI_ERR_ARG. Called before MPI_Init too, as a Fortran layer would. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0, rank = -1;
#define CHECK(cond, ...) do { if (!(cond)) { errs++; printf("rank %d line %d: ", rank, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

static void check_size(MPI_Info info, const char *key, int want) {
    char v[MPI_MAX_INFO_VAL + 1];
    int flag = 0, len = sizeof v;
    MPI_Info_get_string(info, key, &len, v, &flag);
    CHECK(flag && (int)strtol(v, NULL, 10) == want, "%s: flag %d value %s", key, flag, flag ? v : "-");
}

int main(int argc, char **argv) {
    MPI_Info f = MPI_INFO_NULL;
    int t = 1, fl = 0, gt = -1, gf = -1, is_set = -1;
    /* Before MPI_Init: nothing set yet. */
    CHECK(MPI_Abi_get_fortran_info(&f) == MPI_SUCCESS && f == MPI_INFO_NULL, "fortran info before set");
    CHECK(MPI_Abi_get_fortran_booleans(4, &gt, &gf, &is_set) == MPI_SUCCESS && is_set == 0, "booleans set %d", is_set);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    MPI_Info info;
    CHECK(MPI_Abi_get_info(&info) == MPI_SUCCESS && info != MPI_INFO_NULL, "get_info");
    check_size(info, "mpi_aint_size", (int)sizeof(MPI_Aint));
    check_size(info, "mpi_count_size", (int)sizeof(MPI_Count));
    check_size(info, "mpi_offset_size", (int)sizeof(MPI_Offset));
    MPI_Info_free(&info);

    /* A Fortran layer says what it uses; the getters give it back. */
    MPI_Info set;
    MPI_Info_create(&set);
    MPI_Info_set(set, "mpi_logical_size", "4");
    CHECK(MPI_Abi_set_fortran_info(set) == MPI_SUCCESS, "set_fortran_info");
    MPI_Info_free(&set);
    CHECK(MPI_Abi_get_fortran_info(&f) == MPI_SUCCESS && f != MPI_INFO_NULL, "fortran info after set");
    if (f != MPI_INFO_NULL) {
        check_size(f, "mpi_logical_size", 4);
        MPI_Info_free(&f);
    }
    CHECK(MPI_Abi_set_fortran_booleans(4, &t, &fl) == MPI_SUCCESS, "set booleans");
    CHECK(MPI_Abi_get_fortran_booleans(4, &gt, &gf, &is_set) == MPI_SUCCESS && is_set == 1 && gt == 1 && gf == 0,
          "booleans %d %d set %d", gt, gf, is_set);
    long long t8, f8;
    CHECK(MPI_Abi_get_fortran_booleans(8, &t8, &f8, &is_set) == MPI_SUCCESS && is_set == 0, "other size set %d", is_set);

    /* Bad arguments. */
    int class = -1;
    MPI_Error_class(MPI_Abi_get_info(NULL), &class);
    CHECK(class == MPI_ERR_ARG, "get_info(NULL) class %d", class);
    MPI_Error_class(MPI_Abi_set_fortran_booleans(3, &t, &fl), &class);
    CHECK(class == MPI_ERR_ARG, "logical_size 3 class %d", class);
    MPI_Error_class(MPI_Abi_set_fortran_booleans(4, &t, &t), &class);
    CHECK(class == MPI_ERR_ARG, "true == false class %d", class);

    int all = 0;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return all != 0;
}
