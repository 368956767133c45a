/* MPI_T control variables and categories: before MPI_Init, list every variable (name, type,
 * value), read btl_sm_eager_limit and compare it with argv[1] (what mpirun's --mca set, or
 * the default), check every variable sits in exactly one category, names map back to
 * indices, strings are truncated safely, and writing is refused. Prints "cvar NAME" lines
 * for the test to compare with `mpirun --mca-list`. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
#define CHECK(c, ...) do { if (!(c)) { printf("error: " __VA_ARGS__); printf("\n"); errs++; } } while (0)

int main(int argc, char **argv) {
    int provided, n, ncat, rank = 0;
    unsigned long want = argc > 1 ? strtoul(argv[1], NULL, 10) : 32768;
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "get_num before init_thread");
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "init_thread");
    CHECK(MPI_T_cvar_get_num(&n) == MPI_SUCCESS && n > 10, "cvar_get_num %d", n);
    CHECK(MPI_T_category_get_num(&ncat) == MPI_SUCCESS && ncat >= 3, "categories %d", ncat);
    int *owner = calloc(n, sizeof(int));
    int in_cats = 0;
    for (int c = 0; c < ncat; c++) {
        char name[64], desc[256];
        int nl = sizeof name, dl = sizeof desc, nc, np, nsub;
        CHECK(MPI_T_category_get_info(c, name, &nl, desc, &dl, &nc, &np, &nsub) == MPI_SUCCESS,
              "category %d info", c);
        int idx;
        CHECK(MPI_T_category_get_index(name, &idx) == MPI_SUCCESS && idx == c, "category %s", name);
        int *vars = malloc((nc + 1) * sizeof(int));
        CHECK(MPI_T_category_get_cvars(c, nc, vars) == MPI_SUCCESS, "get_cvars %d", c);
        for (int k = 0; k < nc; k++) {
            CHECK(vars[k] >= 0 && vars[k] < n, "category %s: cvar %d", name, vars[k]);
            if (vars[k] >= 0 && vars[k] < n)
                owner[vars[k]]++;
        }
        in_cats += nc;
        free(vars);
    }
    CHECK(in_cats == n, "%d of %d variables in categories", in_cats, n);
    int seen_eager = 0;
    for (int i = 0; i < n; i++) {
        char name[128], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verb, bind, scope, count;
        MPI_Datatype dt;
        MPI_T_enum en;
        CHECK(owner[i] == 1, "cvar %d in %d categories", i, owner[i]);
        CHECK(MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope) ==
                  MPI_SUCCESS, "cvar_get_info %d", i);
        CHECK(nl == (int)strlen(name) + 1, "name_len %d for %s", nl, name);
        CHECK(dt == MPI_UNSIGNED_LONG || dt == MPI_CHAR, "cvar %s: datatype", name);
        CHECK(scope == MPI_T_SCOPE_READONLY && bind == MPI_T_BIND_NO_OBJECT, "cvar %s scope", name);
        int idx;
        CHECK(MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS && idx == i, "cvar_get_index %s", name);
        MPI_T_cvar_handle h;
        CHECK(MPI_T_cvar_handle_alloc(i, NULL, &h, &count) == MPI_SUCCESS, "handle_alloc %s", name);
        if (dt == MPI_UNSIGNED_LONG) {
            unsigned long v = 0;
            CHECK(count == 1, "count %d", count);
            MPI_T_cvar_read(h, &v);
            printf("cvar %s = %lu\n", name, v);
            if (strcmp(name, "btl_sm_eager_limit") == 0) {
                seen_eager = 1;
                CHECK(v == want, "btl_sm_eager_limit = %lu, want %lu", v, want);
                CHECK(MPI_T_cvar_write(h, &v) == MPI_T_ERR_CVAR_SET_NEVER, "write refused");
            }
        } else {
            char *s = malloc(count);
            MPI_T_cvar_read(h, s);
            CHECK(strlen(s) < (size_t)count, "string fits");
            printf("cvar %s = \"%s\"\n", name, s);
            free(s);
        }
        CHECK(MPI_T_cvar_handle_free(&h) == MPI_SUCCESS && h == MPI_T_CVAR_HANDLE_NULL, "free");
    }
    CHECK(seen_eager, "btl_sm_eager_limit listed");
    /* truncation: a 4-char buffer gets 3 chars and the NUL */
    char small[4];
    int sl = sizeof small, idx;
    MPI_T_cvar_get_index("btl_sm_eager_limit", &idx);
    MPI_T_cvar_get_info(idx, small, &sl, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    CHECK(sl == 4 && strcmp(small, "btl") == 0, "truncated name %s (%d)", small, sl);
    CHECK(MPI_T_cvar_get_index("no_such_variable", &idx) == MPI_T_ERR_INVALID_NAME, "bad name");
    CHECK(MPI_T_cvar_get_info(n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX, "bad index");
    free(owner);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_T_finalize();
    int total;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0 && total == 0)
        printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
