/* MPI_Comm_spawn and friends (tests/tests/spawn.rs). Run as `spawn NCHILD` by mpirun at any np:
 * the parents spawn NCHILD copies of this program with argv {"child", "x y", "3"}; parents and
 * children check the intercommunicator (sizes, send/recv both ways, bcast and allreduce across,
 * Intercomm_merge), then a second spawn with MPI_Comm_spawn_multiple of two commands (appnum),
 * publish/lookup and accept/connect between the two spawned groups, and disconnect.
 * Prints " No Errors" at parent rank 0. `spawn bad` spawns a missing program and checks the
 * error class; `spawn die` spawns two children of which one is SIGKILLed. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>

static int errs = 0;
#define CHECK(c, ...) do { if (!(c)) { errs++; fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)

static void check_intercomm(MPI_Comm inter, int parent_side)
{
    int lsize, rsize, rank, flag;
    MPI_Comm_test_inter(inter, &flag);
    CHECK(flag, "not an intercommunicator");
    MPI_Comm_size(inter, &lsize);
    MPI_Comm_remote_size(inter, &rsize);
    MPI_Comm_rank(inter, &rank);
    /* p2p: parent rank 0 <-> every child; child i answers with i*10 */
    if (parent_side) {
        if (rank == 0) {
            for (int i = 0; i < rsize; i++) {
                int v = 100 + i, back;
                MPI_Send(&v, 1, MPI_INT, i, 7, inter);
                MPI_Recv(&back, 1, MPI_INT, i, 8, inter, MPI_STATUS_IGNORE);
                CHECK(back == (100 + i) * 2, "child %d answered %d", i, back);
            }
        }
    } else {
        int v;
        MPI_Status st;
        MPI_Recv(&v, 1, MPI_INT, 0, 7, inter, &st);
        CHECK(v == 100 + rank && st.MPI_SOURCE == 0, "child %d got %d from %d", rank, v, st.MPI_SOURCE);
        v *= 2;
        MPI_Send(&v, 1, MPI_INT, 0, 8, inter);
    }
    /* a large message (rendezvous / streamed) from parent 0 to child 0 */
    {
        int n = 1 << 18;
        int *big = malloc(n * sizeof(int));
        if (parent_side && rank == 0) {
            for (int i = 0; i < n; i++) big[i] = i ^ 0x55;
            MPI_Send(big, n, MPI_INT, 0, 9, inter);
        } else if (!parent_side && rank == 0) {
            MPI_Recv(big, n, MPI_INT, 0, 9, inter, MPI_STATUS_IGNORE);
            for (int i = 0; i < n; i++) if (big[i] != (i ^ 0x55)) { CHECK(0, "big[%d]=%d", i, big[i]); break; }
        }
        free(big);
    }
    /* bcast from parent rank 0 to the children */
    int b = 0;
    if (parent_side) {
        b = 4242;
        MPI_Bcast(&b, 1, MPI_INT, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
    } else {
        MPI_Bcast(&b, 1, MPI_INT, 0, inter);
        CHECK(b == 4242, "bcast gave %d", b);
    }
    /* allreduce: each side gets the sum over the other side of (rank + 1) */
    int one = rank + 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == rsize * (rsize + 1) / 2, "allreduce gave %d (remote size %d)", sum, rsize);
    /* merge: parents first */
    MPI_Comm merged;
    int msize, mrank, total;
    MPI_Intercomm_merge(inter, parent_side ? 0 : 1, &merged);
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    CHECK(msize == lsize + rsize, "merged size %d", msize);
    CHECK(mrank == (parent_side ? rank : rsize + rank), "merged rank %d", mrank);
    MPI_Allreduce(&mrank, &total, 1, MPI_INT, MPI_SUM, merged);
    CHECK(total == msize * (msize - 1) / 2, "merged allreduce %d", total);
    MPI_Comm_free(&merged);
}

static int child(int argc, char **argv, MPI_Comm parent)
{
    int wsize, wrank, *appnum, flag;
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &appnum, &flag);
    if (argc >= 2 && strcmp(argv[1], "die") == 0) {
        if (wrank == 1) raise(SIGKILL); /* mpirun must end the whole job */
        int v;
        MPI_Recv(&v, 1, MPI_INT, 0, 0, parent, MPI_STATUS_IGNORE);
    } else if (argc >= 2 && strcmp(argv[1], "child") == 0) {
        CHECK(argc == 4 && strcmp(argv[2], "x y") == 0 && strcmp(argv[3], "3") == 0, "child argv wrong (argc %d)", argc);
        CHECK(flag && *appnum == 0, "appnum");
        check_intercomm(parent, 0);
    } else if (argc >= 2 && (strcmp(argv[1], "server") == 0 || strcmp(argv[1], "client") == 0)) {
        /* second spawn: the parents' intercomm has both commands; the server group accepts,
         * the client group connects through the published name. */
        int server = strcmp(argv[1], "server") == 0;
        CHECK(flag && *appnum == (server ? 0 : 1), "appnum %d", *appnum);
        MPI_Comm split, other;
        MPI_Comm_split(MPI_COMM_WORLD, server, wrank, &split);
        char port[MPI_MAX_PORT_NAME];
        int srank;
        MPI_Comm_rank(split, &srank);
        if (server) {
            if (srank == 0) {
                MPI_Open_port(MPI_INFO_NULL, port);
                MPI_Publish_name("rmpi-spawn-test", MPI_INFO_NULL, port);
            }
            MPI_Barrier(parent); /* published before the clients look */
            MPI_Comm_accept(port, MPI_INFO_NULL, 0, split, &other);
        } else {
            MPI_Barrier(parent);
            if (srank == 0) MPI_Lookup_name("rmpi-spawn-test", MPI_INFO_NULL, port);
            MPI_Comm_connect(port, MPI_INFO_NULL, 0, split, &other);
        }
        int rsize, v = server ? 1 : 2, got;
        MPI_Comm_remote_size(other, &rsize);
        MPI_Allreduce(&v, &got, 1, MPI_INT, MPI_SUM, other);
        CHECK(got == rsize * (server ? 2 : 1), "accept/connect allreduce %d", got);
        MPI_Barrier(other);
        MPI_Comm_disconnect(&other);
        CHECK(other == MPI_COMM_NULL, "disconnect left the handle");
        if (server && srank == 0) {
            MPI_Unpublish_name("rmpi-spawn-test", MPI_INFO_NULL, port);
            MPI_Close_port(port);
        }
        MPI_Comm_free(&split);
    }
    /* report to the parents and leave */
    MPI_Reduce(&errs, NULL, 1, MPI_INT, MPI_SUM, 0, parent);
    MPI_Comm_disconnect(&parent);
    MPI_Comm_get_parent(&parent);
    CHECK(parent == MPI_COMM_NULL, "parent after disconnect");
    MPI_Finalize();
    return errs ? 1 : 0;
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_get_parent(&parent);
    if (parent != MPI_COMM_NULL)
        return child(argc, argv, parent);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc >= 2 && strncmp(argv[1], "bad", 3) == 0) {
        int code, class, ec[2];
        /* "badfatal": under MPI_ERRORS_ARE_FATAL the job ends, naming the reason. */
        if (strcmp(argv[1], "bad") == 0) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        code = MPI_Comm_spawn("./no-such-program-rmpi", MPI_ARGV_NULL, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, ec);
        MPI_Error_class(code, &class);
        CHECK(class == MPI_ERR_SPAWN, "bad spawn gave class %d", class);
        CHECK(rank != 0 || ec[0] == code, "errcodes");
        char msg[MPI_MAX_ERROR_STRING];
        int len;
        MPI_Error_string(code, msg, &len);
        if (rank == 0) printf("bad spawn: %s\n", msg);
    } else if (argc >= 2 && strcmp(argv[1], "die") == 0) {
        char *args[] = {"die", argc > 2 ? argv[2] : NULL, NULL}; /* a marker for the test */
        int v;
        MPI_Comm_spawn(argv[0], args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
        MPI_Recv(&v, 1, MPI_INT, 0, 0, inter, MPI_STATUS_IGNORE); /* never sent */
    } else {
        int nchild = argc >= 2 ? atoi(argv[1]) : 2;
        char *args[] = {"child", "x y", "3", NULL};
        int ec[16];
        MPI_Comm_spawn(argv[0], args, nchild, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter, ec);
        for (int i = 0; rank == 0 && i < nchild; i++) CHECK(ec[i] == MPI_SUCCESS, "errcode %d", ec[i]);
        int rsize;
        MPI_Comm_remote_size(inter, &rsize);
        CHECK(rsize == nchild, "remote size %d", rsize);
        check_intercomm(inter, 1);
        int cerrs = 0;
        MPI_Reduce(&cerrs, &cerrs, 1, MPI_INT, MPI_SUM, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        CHECK(cerrs == 0, "children found %d errors", cerrs);
        MPI_Comm_disconnect(&inter);

        /* spawn_multiple: 2 servers and 1 client */
        char *cmds[2] = {argv[0], argv[0]};
        char *a0[] = {"server", NULL}, *a1[] = {"client", NULL};
        char **argvs[2] = {a0, a1};
        int np[2] = {2, 1};
        MPI_Info infos[2];
        MPI_Info_create(&infos[0]);
        MPI_Info_set(infos[0], "wdir", ".");
        infos[1] = MPI_INFO_NULL;
        MPI_Comm_spawn_multiple(2, cmds, argvs, np, infos, 0, MPI_COMM_WORLD, &inter, MPI_ERRCODES_IGNORE);
        MPI_Info_free(&infos[0]);
        MPI_Comm_remote_size(inter, &rsize);
        CHECK(rsize == 3, "spawn_multiple remote size %d", rsize);
        MPI_Barrier(inter);
        cerrs = 0;
        MPI_Reduce(&cerrs, &cerrs, 1, MPI_INT, MPI_SUM, rank == 0 ? MPI_ROOT : MPI_PROC_NULL, inter);
        CHECK(cerrs == 0, "spawned servers/clients found %d errors", cerrs);
        MPI_Comm_disconnect(&inter);
    }
    int all;
    MPI_Allreduce(&errs, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && all == 0) printf(" No Errors\n");
    MPI_Finalize();
    return 0;
}
