/* One-sided communication: every synchronisation mode and operation, each value checked.
 * Runs at any np >= 1; prints " No Errors" at rank 0 when all ranks agree. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errs = 0;
#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            errs++;                                        \
            printf("rank %d line %d: ", rank, __LINE__);   \
            printf(__VA_ARGS__);                           \
            printf("\n");                                  \
            fflush(stdout);                                \
        }                                                  \
    } while (0)

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    /* 1. Win_create + fence: ring of puts, then gets of the left neighbour's buffer. */
    {
        int buf[4] = {-1, -1, -1, -1};
        MPI_Win win;
        MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_fence(0, win);
        int v[2] = {rank * 10, rank * 10 + 1};
        MPI_Put(v, 2, MPI_INT, right, 1, 2, MPI_INT, win);
        MPI_Win_fence(0, win);
        CHECK(buf[0] == -1 && buf[1] == left * 10 && buf[2] == left * 10 + 1 && buf[3] == -1,
              "fence put: %d %d %d %d", buf[0], buf[1], buf[2], buf[3]);
        int g[2] = {0, 0};
        MPI_Get(g, 2, MPI_INT, left, 1, 2, MPI_INT, win);
        MPI_Win_fence(0, win);
        int ll = (left + size - 1) % size;
        CHECK(g[0] == ll * 10 && g[1] == ll * 10 + 1, "fence get: %d %d", g[0], g[1]);
        /* Attributes and name. */
        void *base; MPI_Aint *wsize; int *du, *flavor, *model, flag;
        MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
        CHECK(flag && base == buf, "WIN_BASE");
        MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag);
        CHECK(flag && *wsize == sizeof buf, "WIN_SIZE");
        MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &du, &flag);
        CHECK(flag && *du == sizeof(int), "WIN_DISP_UNIT");
        MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
        CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "WIN_CREATE_FLAVOR");
        MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag);
        CHECK(flag && *model == MPI_WIN_UNIFIED, "WIN_MODEL");
        char name[MPI_MAX_OBJECT_NAME]; int len;
        MPI_Win_set_name(win, "ring");
        MPI_Win_get_name(win, name, &len);
        CHECK(len == 4 && strcmp(name, "ring") == 0, "name %s", name);
        MPI_Group g1, g2; int cmp;
        MPI_Win_get_group(win, &g1);
        MPI_Comm_group(MPI_COMM_WORLD, &g2);
        MPI_Group_compare(g1, g2, &cmp);
        CHECK(cmp == MPI_IDENT, "group");
        MPI_Group_free(&g1); MPI_Group_free(&g2);
        /* Errors return through the window's handler. */
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        int rc = MPI_Put(v, 1, MPI_INT, size, 0, 1, MPI_INT, win), cls = -1;
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RANK, "bad rank: class %d", cls);
        rc = MPI_Put(v, 1, MPI_INT, right, 4, 1, MPI_INT, win);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_RANGE, "out of range: class %d", cls);
        rc = MPI_Win_lock(12345, right, 0, win);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_LOCKTYPE, "bad lock type: class %d", cls);
        rc = MPI_Win_unlock(right, win);
        MPI_Error_class(rc, &cls);
        CHECK(cls == MPI_ERR_RMA_SYNC, "unlock without lock: class %d", cls);
        MPI_Errhandler eh;
        MPI_Win_get_errhandler(win, &eh);
        CHECK(eh == MPI_ERRORS_RETURN, "window error handler");
        MPI_Win_fence(0, win);
        MPI_Win_free(&win);
        CHECK(win == MPI_WIN_NULL, "freed window is MPI_WIN_NULL");
    }

    /* 2. Win_allocate: accumulate SUM from all ranks on one element; fetch_and_op counter. */
    {
        long *mem;
        MPI_Win win;
        MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        mem[0] = mem[1] = 0;
        MPI_Win_fence(0, win);
        for (int i = 0; i < 10; i++) {
            long one = rank + 1;
            MPI_Accumulate(&one, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win);
        }
        MPI_Win_fence(0, win);
        if (rank == 0)
            CHECK(mem[0] == 10L * size * (size + 1) / 2, "accumulate sum %ld", mem[0]);
        /* Every rank takes 5 tickets from a counter at rank size-1 under lock_all. */
        long got[5];
        MPI_Win_lock_all(0, win);
        for (int i = 0; i < 5; i++) {
            long one = 1;
            MPI_Fetch_and_op(&one, &got[i], MPI_LONG, size - 1, 1, MPI_SUM, win);
            MPI_Win_flush(size - 1, win);
        }
        MPI_Win_unlock_all(win);
        for (int i = 1; i < 5; i++)
            CHECK(got[i] > got[i - 1], "tickets increase");
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == size - 1) {
            MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
            CHECK(mem[1] == 5L * size, "counter %ld", mem[1]);
            MPI_Win_unlock(rank, win);
        }
        /* All tickets are distinct: gather them. */
        long *all = malloc(sizeof(long) * 5 * size);
        MPI_Allgather(got, 5, MPI_LONG, all, 5, MPI_LONG, MPI_COMM_WORLD);
        char *seen = calloc(5 * size, 1);
        for (int i = 0; i < 5 * size; i++) {
            CHECK(all[i] >= 0 && all[i] < 5 * size && !seen[all[i]], "ticket %ld", all[i]);
            if (all[i] >= 0 && all[i] < 5 * size) seen[all[i]] = 1;
        }
        free(all); free(seen);
        MPI_Win_free(&win);
    }

    /* 3. Compare_and_swap as a spin lock protecting a non-atomic increment (exclusive locks). */
    {
        int *mem;
        MPI_Win win;
        MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        mem[0] = 0; mem[1] = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 3; i++) {
            int mine = rank + 1, zero = 0, old;
            do {
                MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
                MPI_Compare_and_swap(&mine, &zero, &old, MPI_INT, 0, 0, win);
                MPI_Win_unlock(0, win);
            } while (old != 0);
            int v;
            MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
            MPI_Get(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, win);
            MPI_Win_flush(0, win);
            v++;
            MPI_Put(&v, 1, MPI_INT, 0, 1, 1, MPI_INT, win);
            MPI_Win_unlock(0, win);
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            MPI_Compare_and_swap(&zero, &mine, &old, MPI_INT, 0, 0, win);
            MPI_Win_unlock(0, win);
            CHECK(old == mine, "unlock by CAS saw %d", old);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
            CHECK(mem[1] == 3 * size && mem[0] == 0, "CAS-locked count %d (lock %d)", mem[1], mem[0]);
            MPI_Win_unlock(0, win);
        }
        MPI_Win_free(&win);
    }

    /* 4. PSCW: each rank exposes to its left neighbour and accesses its right one. */
    {
        int buf[2] = {0, 0};
        MPI_Win win;
        MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Group world, lg, rg;
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_incl(world, 1, &left, &lg);
        MPI_Group_incl(world, 1, &right, &rg);
        for (int it = 0; it < 3; it++) {
            MPI_Win_post(lg, 0, win);
            MPI_Win_start(rg, 0, win);
            int v = rank * 100 + it;
            MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win);
            int one = 1;
            MPI_Accumulate(&one, 1, MPI_INT, right, 1, 1, MPI_INT, MPI_SUM, win);
            MPI_Win_complete(win);
            if (it == 2) {
                int flag = 0;
                while (!flag) MPI_Win_test(win, &flag);
            } else {
                MPI_Win_wait(win);
            }
            CHECK(buf[0] == left * 100 + it && buf[1] == it + 1, "pscw %d: %d %d", it, buf[0], buf[1]);
        }
        MPI_Group_free(&world); MPI_Group_free(&lg); MPI_Group_free(&rg);
        MPI_Win_free(&win);
    }

    /* 5. Shared window: direct loads and stores of the neighbours' parts. */
    {
        MPI_Comm node;
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
        int nr, ns;
        MPI_Comm_rank(node, &nr);
        MPI_Comm_size(node, &ns);
        int *mine;
        MPI_Win win;
        MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &win);
        MPI_Win_lock_all(0, win);
        for (int i = 0; i < 4; i++) mine[i] = nr * 4 + i;
        MPI_Win_sync(win);
        MPI_Barrier(node);
        MPI_Win_sync(win);
        int *rp; MPI_Aint rsz; int rdu;
        MPI_Win_shared_query(win, (nr + 1) % ns, &rsz, &rdu, &rp);
        CHECK(rsz == 4 * sizeof(int) && rdu == sizeof(int), "shared query %ld %d", (long)rsz, rdu);
        for (int i = 0; i < 4; i++)
            CHECK(rp[i] == ((nr + 1) % ns) * 4 + i, "shared load %d", rp[i]);
        int *p0;
        MPI_Win_shared_query(win, 0, &rsz, &rdu, &p0);
        CHECK(p0 + 4 * nr == mine, "contiguous shared parts");
        MPI_Win_unlock_all(win);
        /* RMA on a shared window too. */
        MPI_Win_fence(0, win);
        int v = -nr;
        MPI_Put(&v, 1, MPI_INT, (nr + 1) % ns, 3, 1, MPI_INT, win);
        MPI_Win_fence(0, win);
        CHECK(mine[3] == -((nr + ns - 1) % ns), "put into shared %d", mine[3]);
        MPI_Win_free(&win);
        MPI_Comm_free(&node);
    }

    /* 6. Dynamic window: attach, exchange the address, Rput/Rget under lock. */
    {
        MPI_Win win;
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        int *mem = calloc(8, sizeof(int));
        MPI_Win_attach(win, mem, 8 * sizeof(int));
        MPI_Aint addr, raddr;
        MPI_Get_address(mem, &addr);
        MPI_Sendrecv(&addr, 1, MPI_AINT, left, 0, &raddr, 1, MPI_AINT, right, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        int v[8];
        for (int i = 0; i < 8; i++) v[i] = rank * 8 + i;
        MPI_Request rq[2];
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win);
        MPI_Rput(v, 8, MPI_INT, right, raddr, 8, MPI_INT, win, &rq[0]);
        MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
        MPI_Win_unlock(right, win);
        MPI_Barrier(MPI_COMM_WORLD);
        for (int i = 0; i < 8; i++)
            CHECK(mem[i] == left * 8 + i, "dynamic put %d", mem[i]);
        /* A strided target type: every other element. */
        MPI_Datatype vec;
        MPI_Type_vector(4, 1, 2, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        int g[4] = {0};
        MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win);
        MPI_Rget(g, 4, MPI_INT, right, raddr, 1, vec, win, &rq[1]);
        MPI_Wait(&rq[1], MPI_STATUS_IGNORE);
        MPI_Win_unlock(right, win);
        for (int i = 0; i < 4; i++)
            CHECK(g[i] == rank * 8 + 2 * i, "strided rget %d", g[i]);
        MPI_Type_free(&vec);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_detach(win, mem);
        MPI_Win_free(&win);
        free(mem);
    }

    /* 7. Get_accumulate and a large put (rendezvous-sized). */
    {
        int n = 100000;
        int *mem;
        MPI_Win win;
        MPI_Win_allocate(n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        for (int i = 0; i < n; i++) mem[i] = rank;
        int *src = malloc(n * sizeof(int)), *old = malloc(n * sizeof(int));
        for (int i = 0; i < n; i++) src[i] = i;
        MPI_Win_fence(0, win);
        MPI_Get_accumulate(src, n, MPI_INT, old, n, MPI_INT, right, 0, n, MPI_INT, MPI_SUM, win);
        MPI_Win_fence(0, win);
        int bad = 0;
        for (int i = 0; i < n; i++) bad += old[i] != right || mem[i] != rank + i;
        CHECK(bad == 0, "get_accumulate: %d wrong (old[1] %d mem[1] %d)", bad, old[1], mem[1]);
        /* Local reads end before the next epoch's puts may land. */
        MPI_Win_fence(0, win);
        MPI_Put(src, n, MPI_INT, right, 0, n, MPI_INT, win);
        MPI_Win_fence(0, win);
        bad = 0;
        for (int i = 0; i < n; i++) bad += mem[i] != i;
        CHECK(bad == 0, "large put: %d wrong", bad);
        free(src); free(old);
        MPI_Win_free(&win);
    }

    /* 8. MAXLOC on a padded pair type (travels packed, applied as the C struct). */
    {
        typedef struct { double v; int i; } di;
        di *mem, mine[3];
        MPI_Win win;
        MPI_Win_allocate(3 * sizeof(di), sizeof(di), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
        for (int k = 0; k < 3; k++) { mem[k].v = -1; mem[k].i = -1; }
        MPI_Win_fence(0, win);
        for (int k = 0; k < 3; k++) { mine[k].v = (rank * 7 + k) % size; mine[k].i = rank; }
        MPI_Accumulate(mine, 3, MPI_DOUBLE_INT, 0, 0, 3, MPI_DOUBLE_INT, MPI_MAXLOC, win);
        MPI_Win_fence(0, win);
        if (rank == 0)
            for (int k = 0; k < 3; k++) {
                double best = -1; int who = -1;
                for (int r = 0; r < size; r++)
                    if ((r * 7 + k) % size > best) { best = (r * 7 + k) % size; who = r; }
                CHECK(mem[k].v == best && mem[k].i == who, "maxloc %d: %g %d", k, mem[k].v, mem[k].i);
            }
        MPI_Win_free(&win);
    }

    int total;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0) printf(" No Errors\n");
        else printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return 0;
}
