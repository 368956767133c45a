/* Completion over arrays: Waitany, Waitsome, Testany, Testsome, Testall, with null requests
 * mixed in, MPI_UNDEFINED when nothing is active, MPI_STATUSES_IGNORE, MPI_ERR_IN_STATUS with
 * a truncated receive, Request_free of an active send (it completes in the background), and
 * Request_get_status_all/any/some. */
#include "p2p_common.h"

int main(int argc, char **argv) {
    int rank, size, i, idx, flag, outcount, err, cls;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int n = 2 * size; /* receives from every rank, two tags, plus nulls */
    MPI_Request *r = malloc((n + 2) * sizeof(MPI_Request)), *s = malloc(n * sizeof(MPI_Request));
    MPI_Status *st = malloc((n + 2) * sizeof(MPI_Status));
    int *in = malloc(n * sizeof(int)), *out = malloc(n * sizeof(int)), *seen = calloc(n + 2, sizeof(int));
    int *indices = malloc((n + 2) * sizeof(int));

    /* all null: undefined */
    r[0] = r[1] = MPI_REQUEST_NULL;
    MPI_Waitany(2, r, &idx, &st[0]);
    CHECK(idx == MPI_UNDEFINED && st[0].MPI_SOURCE == MPI_ANY_SOURCE, "waitany of nulls: %d", idx);
    MPI_Testany(2, r, &idx, &flag, MPI_STATUS_IGNORE);
    CHECK(idx == MPI_UNDEFINED && flag, "testany of nulls: %d %d", idx, flag);
    MPI_Waitsome(2, r, &outcount, indices, MPI_STATUSES_IGNORE);
    CHECK(outcount == MPI_UNDEFINED, "waitsome of nulls: %d", outcount);
    MPI_Testsome(2, r, &outcount, indices, MPI_STATUSES_IGNORE);
    CHECK(outcount == MPI_UNDEFINED, "testsome of nulls: %d", outcount);
    MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
    CHECK(flag, "testall of nulls");
    MPI_Waitany(0, NULL, &idx, MPI_STATUS_IGNORE);
    CHECK(idx == MPI_UNDEFINED, "waitany of none: %d", idx);

    for (int round = 0; round < 4; round++) {
        /* receives at 1..n, nulls at 0 and n+1 */
        r[0] = r[n + 1] = MPI_REQUEST_NULL;
        for (i = 0; i < n; i++) {
            in[i] = -1;
            MPI_Irecv(&in[i], 1, MPI_INT, i / 2, i % 2, MPI_COMM_WORLD, &r[i + 1]);
        }
        for (i = 0; i < n; i++) {
            out[i] = rank * 100 + i % 2 + round;
            MPI_Isend(&out[i], 1, MPI_INT, i / 2, i % 2, MPI_COMM_WORLD, &s[i]);
        }
        memset(seen, 0, (n + 2) * sizeof(int));
        int done = 0;
        while (done < n) {
            if (round == 0) {
                MPI_Waitany(n + 2, r, &idx, &st[0]);
                CHECK(idx >= 1 && idx <= n && !seen[idx], "waitany index %d", idx);
                seen[idx] = 1;
                CHECK(r[idx] == MPI_REQUEST_NULL, "waitany did not null the request");
                CHECK(st[0].MPI_SOURCE == (idx - 1) / 2 && st[0].MPI_TAG == (idx - 1) % 2, "waitany status");
                done++;
            } else if (round == 1) {
                MPI_Testany(n + 2, r, &idx, &flag, &st[0]);
                if (flag) {
                    CHECK(idx >= 1 && idx <= n && !seen[idx], "testany index %d", idx);
                    seen[idx] = 1;
                    done++;
                } else {
                    CHECK(idx == MPI_UNDEFINED, "testany without completion gave index %d", idx);
                }
            } else if (round == 2) {
                MPI_Waitsome(n + 2, r, &outcount, indices, st);
                CHECK(outcount >= 1, "waitsome outcount %d", outcount);
                for (i = 0; i < outcount; i++) {
                    CHECK(indices[i] >= 1 && indices[i] <= n && !seen[indices[i]], "waitsome index %d", indices[i]);
                    seen[indices[i]] = 1;
                    CHECK(st[i].MPI_SOURCE == (indices[i] - 1) / 2, "waitsome status %d", i);
                }
                done += outcount;
            } else {
                MPI_Testsome(n + 2, r, &outcount, indices, MPI_STATUSES_IGNORE);
                CHECK(outcount >= 0, "testsome outcount %d", outcount);
                for (i = 0; i < outcount; i++) {
                    CHECK(!seen[indices[i]], "testsome index twice");
                    seen[indices[i]] = 1;
                }
                done += outcount;
            }
        }
        for (i = 0; i < n; i++)
            CHECK(in[i] == (i / 2) * 100 + i % 2 + round, "rank %d round %d: in[%d] = %d", rank, round, i, in[i]);
        do { MPI_Testall(n, s, &flag, MPI_STATUSES_IGNORE); } while (!flag);
        for (i = 0; i < n; i++) CHECK(s[i] == MPI_REQUEST_NULL, "testall did not null send %d", i);
    }

    /* ERR_IN_STATUS: one truncated receive among good ones */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    int two[2] = {1, 2}, got2[2], got1;
    MPI_Irecv(got2, 2, MPI_INT, from, 20, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(&got1, 1, MPI_INT, from, 21, MPI_COMM_WORLD, &r[1]);
    MPI_Send(two, 2, MPI_INT, to, 20, MPI_COMM_WORLD);
    MPI_Send(two, 2, MPI_INT, to, 21, MPI_COMM_WORLD);
    do {
        err = MPI_Testall(2, r, &flag, st);
    } while (!flag && err == MPI_SUCCESS);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS, "testall with a truncation gave class %d", cls);
    MPI_Error_class(st[1].MPI_ERROR, &cls);
    CHECK(st[0].MPI_ERROR == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE, "statuses' errors %d %d", st[0].MPI_ERROR, st[1].MPI_ERROR);
    MPI_Irecv(&got1, 1, MPI_INT, from, 22, MPI_COMM_WORLD, &r[0]);
    MPI_Send(two, 2, MPI_INT, to, 22, MPI_COMM_WORLD);
    err = MPI_Waitsome(1, r, &outcount, indices, st);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS && outcount == 1, "waitsome with a truncation gave class %d", cls);
    MPI_Irecv(&got1, 1, MPI_INT, from, 23, MPI_COMM_WORLD, &r[0]);
    MPI_Send(two, 2, MPI_INT, to, 23, MPI_COMM_WORLD);
    err = MPI_Waitany(1, r, &idx, &st[0]);
    MPI_Error_class(err, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE && idx == 0, "waitany with a truncation gave class %d", cls);

    /* Request_free of an active send: it still arrives */
    static char big[200000];
    static char bigin[200000];
    for (i = 0; i < (int)sizeof big; i++) big[i] = (char)(i + rank);
    MPI_Isend(big, sizeof big, MPI_CHAR, to, 30, MPI_COMM_WORLD, &r[0]);
    MPI_Request_free(&r[0]);
    CHECK(r[0] == MPI_REQUEST_NULL, "request_free did not null");
    MPI_Recv(bigin, sizeof bigin, MPI_CHAR, from, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (i = 0; i < (int)sizeof big; i++) if (bigin[i] != (char)(i + from)) break;
    CHECK(i == (int)sizeof big, "freed send's data wrong at %d", i);
    /* the freed send must have completed before big may be reused: a round trip says so */
    MPI_Sendrecv(NULL, 0, MPI_CHAR, from, 31, NULL, 0, MPI_CHAR, to, 31, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    /* Request_get_status_all/any/some report without freeing */
    int x = rank + 500, y = -1;
    MPI_Irecv(&y, 1, MPI_INT, from, 40, MPI_COMM_WORLD, &r[0]);
    r[1] = MPI_REQUEST_NULL;
    MPI_Send(&x, 1, MPI_INT, to, 40, MPI_COMM_WORLD);
    do { MPI_Request_get_status_all(2, r, &flag, st); } while (!flag);
    CHECK(r[0] != MPI_REQUEST_NULL && st[0].MPI_SOURCE == from && st[1].MPI_SOURCE == MPI_ANY_SOURCE, "get_status_all");
    MPI_Request_get_status_any(2, r, &idx, &flag, &st[0]);
    CHECK(flag && idx == 0 && st[0].MPI_TAG == 40, "get_status_any: %d %d", flag, idx);
    MPI_Request_get_status_some(2, r, &outcount, indices, st);
    CHECK(outcount == 1 && indices[0] == 0, "get_status_some: %d", outcount);
    MPI_Wait(&r[0], &st[0]);
    CHECK(y == from + 500 && r[0] == MPI_REQUEST_NULL, "after get_status: %d", y);

    free(r); free(s); free(st); free(in); free(out); free(seen); free(indices);
    return finish();
}
