/* Another user on the node trying to get into a job, for tests/tests/security.rs (run as a
 * second uid). Not an MPI program.
 *   intruder PID [SOCKET]
 * Tries to read the rank PID's open descriptors (its shared-memory memfd among them) through
 * /proc/PID/fd, and, given the abstract name of the rank's soft-verbs listener, dials it and
 * waits up to 3 s for the rank to close the connection. Prints one line per attempt:
 * "fds: refused" / "fds: open", "socket: closed" / "socket: kept" / "socket: unreachable". */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: intruder PID [SOCKET]\n");
        return 2;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/fd", argv[1]);
    DIR *d = opendir(path);
    int opened = 0;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            char p[128];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            if (e->d_name[0] != '.' && access(p, R_OK) == 0)
                opened++;
        }
        closedir(d);
    }
    printf("fds: %s\n", opened ? "open" : "refused");
    if (argc < 3)
        return 0;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(argv[2]);
    memcpy(sa.sun_path + 1, argv[2], n); /* abstract: a leading NUL */
    if (connect(fd, (struct sockaddr *)&sa, (socklen_t)(sizeof(sa_family_t) + 1 + n)) != 0) {
        printf("socket: unreachable (%s)\n", strerror(errno));
        return 0;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char b[8];
    int closed = poll(&p, 1, 3000) == 1 && recv(fd, b, sizeof b, 0) <= 0;
    printf("socket: %s\n", closed ? "closed" : "kept");
    return 0;
}
