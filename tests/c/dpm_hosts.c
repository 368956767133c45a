/* `dpm_hosts spawn N [HOST]`: spawns N children (on HOST by the info key host); each sends
 * its host name to the parents' root, which prints "child I on NAME"; traffic as below.
 * Two jobs meet: `dpm_hosts server FILE` opens a port and writes its name to FILE;
 * `dpm_hosts client FILE` (another mpirun, maybe on another host) reads it and connects.
 * `join-server FILE` / `join-client FILE`: rank 0 of each job meets through MPI_Comm_join over
 * a TCP socket (the server writes its address to FILE). Both jobs then check every byte of
 * messages of 0 B to 4 MiB between their ranks i (both directions), an allreduce over the
 * intercommunicator and over its merge, and disconnect. Prints "dpm_hosts: OK" at rank 0. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "dpm_hosts: " __VA_ARGS__);                                            \
            fprintf(stderr, "\n");                                                                 \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                          \
        }                                                                                          \
    } while (0)

static void put_file(const char *path, const char *text)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    CHECK(f, "cannot write %s", tmp);
    fputs(text, f);
    fclose(f);
    CHECK(rename(tmp, path) == 0, "cannot rename %s", tmp);
}

static void get_file(const char *path, char *out, int cap)
{
    for (int i = 0; i < 600; i++) { /* 60 s */
        FILE *f = fopen(path, "r");
        if (f) {
            int n = (int)fread(out, 1, cap - 1, f);
            fclose(f);
            out[n] = 0;
            return;
        }
        usleep(100000);
    }
    CHECK(0, "no %s after 60 s", path);
}

/* A non-loopback IPv4 address of this host (127.0.0.1 if none). */
static void my_ip(char *out, int cap)
{
    struct ifaddrs *head, *p;
    snprintf(out, cap, "127.0.0.1");
    if (getifaddrs(&head) != 0) return;
    for (p = head; p; p = p->ifa_next) {
        if (!p->ifa_addr || p->ifa_addr->sa_family != AF_INET) continue;
        struct in_addr a = ((struct sockaddr_in *)p->ifa_addr)->sin_addr;
        if ((ntohl(a.s_addr) >> 24) == 127) continue;
        inet_ntop(AF_INET, &a, out, cap);
        break;
    }
    freeifaddrs(head);
}

static int join_fd(int server, const char *path)
{
    if (server) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET};
        CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0, "listen");
        socklen_t n = sizeof a;
        getsockname(l, (struct sockaddr *)&a, &n);
        char ip[64], text[128];
        my_ip(ip, sizeof ip);
        snprintf(text, sizeof text, "%s %d", ip, ntohs(a.sin_port));
        put_file(path, text);
        int fd = accept(l, NULL, NULL);
        CHECK(fd >= 0, "accept");
        close(l);
        return fd;
    }
    char text[128], ip[64];
    int port;
    get_file(path, text, sizeof text);
    CHECK(sscanf(text, "%63s %d", ip, &port) == 2, "bad address file");
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &a.sin_addr);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect to %s", text);
    return fd;
}

static void fill(unsigned char *b, long n, int seed)
{
    for (long i = 0; i < n; i++) b[i] = (unsigned char)(i * 7 + seed * 13 + (i >> 9));
}

static void traffic(MPI_Comm inter, int server)
{
    int rank, rsize;
    MPI_Comm_rank(inter, &rank);
    MPI_Comm_remote_size(inter, &rsize);
    if (rank < rsize) {
        static const long sizes[] = {0, 1, 1000, 16385, 65537, 100000, 1 << 22};
        long max = 1 << 22;
        unsigned char *out = malloc(max), *in = malloc(max), *want = malloc(max);
        for (unsigned k = 0; k < sizeof sizes / sizeof *sizes; k++) {
            long n = sizes[k];
            fill(out, n, server * 100 + rank + (int)k);
            fill(want, n, (!server) * 100 + rank + (int)k);
            memset(in, 0xee, n);
            MPI_Status st;
            MPI_Sendrecv(out, (int)n, MPI_BYTE, rank, (int)k, in, (int)n, MPI_BYTE, rank, (int)k, inter, &st);
            int got;
            MPI_Get_count(&st, MPI_BYTE, &got);
            CHECK(got == n && memcmp(in, want, n) == 0, "%ld bytes from remote rank %d differ", n, rank);
        }
        free(out);
        free(in);
        free(want);
    }
    int one = 1, sum = 0;
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, inter);
    CHECK(sum == rsize, "intercomm allreduce %d, want %d", sum, rsize);
    MPI_Comm merged;
    int lsize, msize;
    MPI_Comm_size(inter, &lsize);
    MPI_Intercomm_merge(inter, !server, &merged);
    MPI_Comm_size(merged, &msize);
    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == msize && msize == lsize + rsize, "merged allreduce %d of %d", sum, msize);
    MPI_Comm_free(&merged);
}

static int spawn_mode(int argc, char **argv)
{
    MPI_Comm parent, inter;
    MPI_Comm_get_parent(&parent);
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    if (parent != MPI_COMM_NULL) {
        MPI_Send(host, sizeof host, MPI_CHAR, 0, 1, parent);
        traffic(parent, 0);
        MPI_Comm_disconnect(&parent);
        MPI_Finalize();
        return 0;
    }
    MPI_Info info = MPI_INFO_NULL;
    if (argc > 3 && strcmp(argv[3], "-") != 0) {
        MPI_Info_create(&info);
        MPI_Info_set(info, "host", argv[3]);
    }
    int n = atoi(argv[2]), rank, errs[64];
    char *args[] = {"spawn", argv[2], "-", NULL};
    MPI_Comm_spawn(argv[0], args, n, info, 0, MPI_COMM_WORLD, &inter, errs);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        for (int i = 0; i < n; i++) {
            char h[256];
            MPI_Recv(h, sizeof h, MPI_CHAR, i, 1, inter, MPI_STATUS_IGNORE);
            printf("child %d on %s\n", i, h);
        }
    }
    traffic(inter, 1);
    MPI_Comm_disconnect(&inter);
    if (rank == 0) printf("dpm_hosts: OK\n");
    MPI_Finalize();
    return 0;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc >= 3 && strcmp(argv[1], "spawn") == 0) return spawn_mode(argc, argv);
    /* A further argument is a marker for the tests (ignored). */
    CHECK(argc >= 3, "usage: dpm_hosts server|client|join-server|join-client FILE");
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *mode = argv[1], *path = argv[2];
    int server = strstr(mode, "server") != NULL;
    MPI_Comm inter;
    if (strncmp(mode, "join-", 5) == 0) {
        /* Rank 0 of each side joins; the others wait. */
        MPI_Comm pair = MPI_COMM_NULL;
        if (rank == 0) {
            int fd = join_fd(server, path);
            MPI_Comm_join(fd, &pair);
            CHECK(pair != MPI_COMM_NULL, "MPI_Comm_join gave MPI_COMM_NULL");
            int rs;
            MPI_Comm_remote_size(pair, &rs);
            CHECK(rs == 1, "join remote size %d", rs);
            traffic(pair, server);
            MPI_Comm_disconnect(&pair);
            close(fd);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) printf("dpm_hosts: OK\n");
        MPI_Finalize();
        return 0;
    }
    char port[MPI_MAX_PORT_NAME];
    if (server) {
        if (rank == 0) {
            MPI_Open_port(MPI_INFO_NULL, port);
            put_file(path, port);
        }
        MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
        if (rank == 0) MPI_Close_port(port);
    } else {
        if (rank == 0) get_file(path, port, sizeof port);
        MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &inter);
    }
    traffic(inter, server);
    MPI_Comm_disconnect(&inter);
    if (rank == 0) printf("dpm_hosts: OK\n");
    MPI_Finalize();
    return 0;
}
