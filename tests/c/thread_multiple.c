/* MPI_THREAD_MULTIPLE: threads call MPI at once, every value checked.
 *
 * Phases (all by default; argv[1] picks one: p2p, any, mprobe, comm, collp2p, dupfree,
 * group, bsend):
 *   p2p      NT threads x every peer (and self): tagged messages of 0 B to 96 KiB (eager and
 *            rendezvous) by Send/Recv, Isend/Irecv/Waitall, Sendrecv, Ssend; every byte checked.
 *   any      every thread of every rank sends K messages to every rank; at each rank NT threads
 *            receive them with MPI_ANY_SOURCE/MPI_ANY_TAG; each message's header must match its
 *            status, its bytes its header, and every (source, tag, seq) must arrive once.
 *   mprobe   the same traffic taken by MPI_Mprobe/MPI_Improbe + MPI_Mrecv from NT threads
 *            at once, sized by MPI_Get_count: a matched message is received by the thread that
 *            matched it and no other.
 *   comm     each thread dups, splits (split, split_type, create) its own communicator, R
 *            times, the threads of odd
 *            ranks in the reverse order of the even ranks' (so the calls on different
 *            communicators interleave differently at each process); each new communicator is
 *            checked with an allreduce and freed.
 *   collp2p  one thread runs collectives on one communicator while another exchanges
 *            point-to-point messages on another.
 *   dupfree  each thread dups and frees its own communicator D times at once (MPICH's
 *            dup_leak_test): the context ids rank 0 broadcasts queue up behind one another.
 *   group    each thread runs MPI_Comm_create_group on its own communicator (tag = thread)
 *            and MPI_Comm_create_from_group on a session's mpi://WORLD (its own string tag),
 *            R times, odd ranks' threads in the reverse order (only the group's members call,
 *            so nothing orders one process's threads against another's). Also: MPI_T and a
 *            session made without a thread_level hint provide MULTIPLE.
 *   bsend    one thread buffers a rendezvous-sized message to the right neighbour and waits
 *            for it to leave the buffer (MPI_Buffer_detach, then a communicator's buffer with
 *            MPI_Comm_flush_buffer) while another thread sends the token that the neighbour's
 *            other thread waits for before it receives that message: the flush must wait
 *            without keeping the process's other threads out of MPI.
 * Rank 0 prints " No Errors" when every rank found none. */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NT 4
#define K 24
#define R 6

static int rank, size;
static int errs;
static pthread_mutex_t errs_mu = PTHREAD_MUTEX_INITIALIZER;
static MPI_Comm tcomm[NT];

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            pthread_mutex_lock(&errs_mu);                                    \
            errs++;                                                          \
            fprintf(stderr, "rank %d: ", rank);                              \
            fprintf(stderr, __VA_ARGS__);                                    \
            fprintf(stderr, "\n");                                           \
            pthread_mutex_unlock(&errs_mu);                                  \
        }                                                                    \
    } while (0)

static unsigned char pattern(int src, int tag, int seq, size_t i) {
    return (unsigned char)(src * 131 + tag * 31 + seq * 7 + i * 13 + (i >> 8));
}

static size_t msg_len(int src, int tag, int seq) {
    static const size_t lens[] = {0, 1, 7, 64, 1000, 4096, 16384, 16385, 40000, 98304};
    return lens[(src + tag + seq) % 10];
}

static void fill(unsigned char *b, size_t n, int src, int tag, int seq) {
    for (size_t i = 0; i < n; i++)
        b[i] = pattern(src, tag, seq, i);
}

static int bad_bytes(const unsigned char *b, size_t n, int src, int tag, int seq) {
    for (size_t i = 0; i < n; i++)
        if (b[i] != pattern(src, tag, seq, i))
            return 1;
    return 0;
}

typedef void *(*thread_fn)(void *);

static void run_threads(thread_fn f) {
    pthread_t th[NT];
    for (long t = 0; t < NT; t++)
        pthread_create(&th[t], NULL, f, (void *)t);
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
}

/* ---- p2p: thread t talks to every rank with tag t ---- */
static void *p2p_thread(void *arg) {
    int t = (int)(long)arg;
    int flag, level;
    MPI_Is_thread_main(&flag);
    CHECK(!flag, "thread %d: MPI_Is_thread_main says main", t);
    MPI_Query_thread(&level);
    CHECK(level == MPI_THREAD_MULTIPLE, "thread %d: MPI_Query_thread %d", t, level);
    size_t cap = 98304;
    unsigned char *out = malloc(cap), *in = malloc(cap);
    for (int seq = 0; seq < K; seq++) {
        for (int d = 0; d < size; d++) {
            /* Exchange with peer (rank + d) % size, receive from (rank - d). */
            int to = (rank + d) % size, from = (rank - d + size) % size;
            size_t n_out = msg_len(rank, t, seq), n_in = msg_len(from, t, seq);
            fill(out, n_out, rank, t, seq);
            memset(in, 0xee, cap);
            MPI_Status st;
            int cnt;
            switch (seq % 4) {
            case 0: { /* receive posted first, blocking send, wait */
                MPI_Request rq;
                MPI_Irecv(in, (int)cap, MPI_BYTE, from, t, tcomm[0], &rq);
                MPI_Send(out, (int)n_out, MPI_BYTE, to, t, tcomm[0]);
                MPI_Wait(&rq, &st);
                break;
            }
            case 1: {
                MPI_Request rq[2];
                MPI_Irecv(in, (int)cap, MPI_BYTE, from, t, tcomm[0], &rq[0]);
                MPI_Isend(out, (int)n_out, MPI_BYTE, to, t, tcomm[0], &rq[1]);
                MPI_Status sts[2];
                MPI_Waitall(2, rq, sts);
                st = sts[0];
                break;
            }
            case 2:
                MPI_Sendrecv(out, (int)n_out, MPI_BYTE, to, t, in, (int)cap, MPI_BYTE, from, t,
                             tcomm[0], &st);
                break;
            default: { /* blocking receive against a synchronous send */
                MPI_Request rq;
                MPI_Issend(out, (int)n_out, MPI_BYTE, to, t, tcomm[0], &rq);
                MPI_Recv(in, (int)cap, MPI_BYTE, from, t, tcomm[0], &st);
                MPI_Wait(&rq, MPI_STATUS_IGNORE);
                break;
            }
            }
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(st.MPI_SOURCE == from && st.MPI_TAG == t && cnt == (int)n_in,
                  "p2p thread %d seq %d: status source %d tag %d count %d, want %d %d %zu", t,
                  seq, st.MPI_SOURCE, st.MPI_TAG, cnt, from, t, n_in);
            CHECK(!bad_bytes(in, n_in, from, t, seq), "p2p thread %d seq %d from %d: bad bytes",
                  t, seq, from);
        }
    }
    free(out);
    free(in);
    return NULL;
}

/* ---- any / mprobe: wildcard receives across threads ---- */
/* Every message starts with a header (src, tag, seq, len); tag = sending thread. */
struct hdr {
    int src, tag, seq, len;
};
static int seen[64][NT][K]; /* [src][tag][seq] arrivals at this rank */
static int use_mprobe;

static void *any_sender(int t) {
    size_t cap = 98304 + sizeof(struct hdr);
    unsigned char *out = malloc(cap);
    MPI_Request *rq = malloc(sizeof(MPI_Request) * size);
    for (int seq = 0; seq < K; seq++) {
        for (int d = 0; d < size; d++) {
            int to = (rank + d) % size;
            size_t n = msg_len(rank, t, seq);
            struct hdr h = {rank, t, seq, (int)n};
            memcpy(out, &h, sizeof h);
            fill(out + sizeof h, n, rank, t, seq);
            /* One buffer: wait for each send before refilling (Ssend on odd seqs). */
            if (seq % 2)
                MPI_Ssend(out, (int)(n + sizeof h), MPI_BYTE, to, t, tcomm[1]);
            else
                MPI_Send(out, (int)(n + sizeof h), MPI_BYTE, to, t, tcomm[1]);
        }
    }
    free(rq);
    free(out);
    return NULL;
}

static void check_any(unsigned char *in, MPI_Status *st, int t) {
    int cnt;
    MPI_Get_count(st, MPI_BYTE, &cnt);
    struct hdr h;
    if (cnt < (int)sizeof h) {
        CHECK(0, "thread %d: message of %d bytes has no header", t, cnt);
        return;
    }
    memcpy(&h, in, sizeof h);
    if (h.src < 0 || h.src >= size || h.tag < 0 || h.tag >= NT || h.seq < 0 || h.seq >= K) {
        CHECK(0, "thread %d: bad header %d %d %d", t, h.src, h.tag, h.seq);
        return;
    }
    CHECK(st->MPI_SOURCE == h.src && st->MPI_TAG == h.tag &&
              cnt == (int)(h.len + sizeof h) && (size_t)h.len == msg_len(h.src, h.tag, h.seq),
          "thread %d: status (%d, %d, %d) vs header (%d, %d, %d)", t, st->MPI_SOURCE,
          st->MPI_TAG, cnt, h.src, h.tag, h.len);
    CHECK(!bad_bytes(in + sizeof h, h.len, h.src, h.tag, h.seq), "thread %d: bad bytes from %d",
          t, h.src);
    __atomic_fetch_add(&seen[h.src][h.tag][h.seq], 1, __ATOMIC_RELAXED);
}

static void *any_receiver(int t) {
    size_t cap = 98304 + sizeof(struct hdr);
    unsigned char *in = malloc(cap);
    /* size * NT * K messages reach this rank; each of the NT receivers takes size * K. */
    for (int i = 0; i < size * K; i++) {
        MPI_Status st;
        if (!use_mprobe) {
            MPI_Recv(in, (int)cap, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, tcomm[1], &st);
        } else {
            MPI_Message m;
            MPI_Status pst;
            if (i % 2) {
                MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, tcomm[1], &m, &pst);
            } else {
                int flag = 0;
                while (!flag)
                    MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, tcomm[1], &flag, &m, &pst);
            }
            int cnt;
            MPI_Get_count(&pst, MPI_BYTE, &cnt);
            /* Exactly the matched size: a message taken by another thread would not fit. */
            unsigned char *exact = malloc(cnt ? cnt : 1);
            MPI_Mrecv(exact, cnt, MPI_BYTE, &m, &st);
            CHECK(m == MPI_MESSAGE_NULL, "thread %d: MPI_Mrecv left the message handle", t);
            CHECK(st.MPI_SOURCE == pst.MPI_SOURCE && st.MPI_TAG == pst.MPI_TAG,
                  "thread %d: Mrecv status (%d, %d) differs from the probe's (%d, %d)", t,
                  st.MPI_SOURCE, st.MPI_TAG, pst.MPI_SOURCE, pst.MPI_TAG);
            memcpy(in, exact, cnt);
            free(exact);
        }
        check_any(in, &st, t);
    }
    free(in);
    return NULL;
}

/* Threads 0..NT-1 receive; NT..2NT-1 send. */
static void *any_thread(void *arg) {
    int t = (int)(long)arg;
    return t < NT ? any_receiver(t) : any_sender(t - NT);
}

static void any_phase(int mprobe) {
    use_mprobe = mprobe;
    memset(seen, 0, sizeof seen);
    pthread_t th[2 * NT];
    for (long t = 0; t < 2 * NT; t++)
        pthread_create(&th[t], NULL, any_thread, (void *)t);
    for (int t = 0; t < 2 * NT; t++)
        pthread_join(th[t], NULL);
    for (int s = 0; s < size; s++)
        for (int t = 0; t < NT; t++)
            for (int q = 0; q < K; q++)
                CHECK(seen[s][t][q] == 1, "%s: message (%d, %d, %d) arrived %d times",
                      mprobe ? "mprobe" : "any", s, t, q, seen[s][t][q]);
}

/* ---- comm: concurrent dup/split on different communicators ---- */
static void *comm_thread(void *arg) {
    int t = (int)(long)arg;
    /* Odd ranks go through the threads' communicators in the reverse order. */
    if (rank % 2)
        usleep(1000 * (NT - 1 - t));
    else
        usleep(1000 * t);
    for (int r = 0; r < R; r++) {
        MPI_Comm d, s;
        int v, sum, sz, rk;
        MPI_Comm_dup(tcomm[t], &d);
        MPI_Comm_size(d, &sz);
        MPI_Comm_rank(d, &rk);
        CHECK(sz == size && rk == rank, "thread %d: dup is %d/%d", t, rk, sz);
        v = rank + t + r;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, d);
        CHECK(sum == size * (t + r) + size * (size - 1) / 2, "thread %d: allreduce on dup %d", t,
              sum);
        /* Colors by parity, keys reversed: new rank = position among the same parity,
         * counted from the top. */
        MPI_Comm_split(tcomm[t], rank % 2, -rank, &s);
        MPI_Comm_size(s, &sz);
        MPI_Comm_rank(s, &rk);
        int want_sz = (size + 1 - rank % 2) / 2;
        int want_rk = (want_sz - 1) - rank / 2;
        CHECK(sz == want_sz && rk == want_rk, "thread %d: split is %d/%d, want %d/%d", t, rk, sz,
              want_rk, want_sz);
        v = 1;
        MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, s);
        CHECK(sum == want_sz, "thread %d: allreduce on split %d", t, sum);
        /* A split with MPI_UNDEFINED for some. */
        MPI_Comm u;
        MPI_Comm_split(d, rank == 0 ? MPI_UNDEFINED : 7, rank, &u);
        if (rank == 0) {
            CHECK(u == MPI_COMM_NULL, "thread %d: MPI_UNDEFINED gave a communicator", t);
        } else {
            MPI_Comm_size(u, &sz);
            CHECK(sz == size - 1, "thread %d: split without rank 0 has %d", t, sz);
            MPI_Comm_free(&u);
        }
        /* MPI_Comm_create with the ranks reversed, and without the last rank. */
        MPI_Group g, gr;
        int ranks[64], nr = 0;
        MPI_Comm_group(tcomm[t], &g);
        for (int i = size - 2; i >= 0; i--)
            ranks[nr++] = i;
        if (size == 1)
            ranks[nr++] = 0;
        MPI_Group_incl(g, nr, ranks, &gr);
        MPI_Comm cr;
        MPI_Comm_create(tcomm[t], gr, &cr);
        if (rank == size - 1 && size > 1) {
            CHECK(cr == MPI_COMM_NULL, "thread %d: MPI_Comm_create gave a non-member a comm", t);
        } else {
            MPI_Comm_size(cr, &sz);
            MPI_Comm_rank(cr, &rk);
            CHECK(sz == nr && rk == nr - 1 - rank, "thread %d: create is %d/%d", t, rk, sz);
            v = rank;
            MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_MAX, cr);
            CHECK(sum == nr - 1, "thread %d: allreduce on create %d", t, sum);
            MPI_Comm_free(&cr);
        }
        MPI_Group_free(&gr);
        MPI_Group_free(&g);
        /* MPI_Comm_split_type: one node here. */
        MPI_Comm_split_type(tcomm[t], MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &cr);
        MPI_Comm_size(cr, &sz);
        MPI_Comm_rank(cr, &rk);
        CHECK(sz == size && rk == rank, "thread %d: split_type is %d/%d", t, rk, sz);
        MPI_Comm_free(&cr);
        MPI_Comm_free(&s);
        MPI_Comm_free(&d);
    }
    return NULL;
}

/* ---- dupfree: many dups and frees from every thread at once ---- */
#define D 1500
static void *dupfree_thread(void *arg) {
    int t = (int)(long)arg;
    for (int i = 0; i < D; i++) {
        MPI_Comm d;
        MPI_Comm_dup(tcomm[t], &d);
        MPI_Comm_free(&d);
    }
    return NULL;
}

/* ---- group: creations among a group's members only, from several threads ---- */
static MPI_Session session;

static void check_comm(MPI_Comm c, int want_sz, int want_rk, const char *what, int t) {
    int sz, rk, v = 1, sum = 0;
    MPI_Comm_size(c, &sz);
    MPI_Comm_rank(c, &rk);
    CHECK(sz == want_sz && rk == want_rk, "thread %d: %s is %d/%d", t, what, rk, sz);
    MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(sum == want_sz, "thread %d: allreduce on %s %d", t, what, sum);
}

static void *group_thread(void *arg) {
    int t = (int)(long)arg;
    if (rank % 2)
        usleep(1000 * (NT - 1 - t));
    else
        usleep(1000 * t);
    MPI_Group g, rev, wg;
    int ranks[64];
    MPI_Comm_group(tcomm[t], &g);
    for (int i = 0; i < size; i++)
        ranks[i] = size - 1 - i;
    MPI_Group_incl(g, size, ranks, &rev);
    MPI_Group_from_session_pset(session, "mpi://WORLD", &wg);
    char stag[32];
    snprintf(stag, sizeof stag, "thread_multiple %d", t);
    for (int r = 0; r < R; r++) {
        MPI_Comm c;
        CHECK(MPI_Comm_create_group(tcomm[t], rev, t, &c) == MPI_SUCCESS,
              "thread %d: MPI_Comm_create_group", t);
        check_comm(c, size, size - 1 - rank, "create_group", t);
        MPI_Comm_free(&c);
        CHECK(MPI_Comm_create_from_group(wg, stag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &c) ==
                  MPI_SUCCESS,
              "thread %d: MPI_Comm_create_from_group", t);
        check_comm(c, size, rank, "create_from_group", t);
        MPI_Comm_free(&c);
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&rev);
    MPI_Group_free(&g);
    return NULL;
}

static void group_phase(void) {
    int provided = -1, flag = 0, vlen;
    char v[64];
    MPI_Info used;
    CHECK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS &&
              provided == MPI_THREAD_MULTIPLE,
          "MPI_T_init_thread provided %d", provided);
    MPI_T_finalize();
    MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session);
    MPI_Session_get_info(session, &used);
    vlen = sizeof v;
    MPI_Info_get_string(used, "thread_level", &vlen, v, &flag);
    CHECK(flag && !strcmp(v, "MPI_THREAD_MULTIPLE"), "session thread_level %s",
          flag ? v : "(none)");
    MPI_Info_free(&used);
    run_threads(group_thread);
    MPI_Session_finalize(&session);
}

/* ---- collp2p: collectives on tcomm[2] beside point-to-point on tcomm[3] ---- */
static void *collp2p_thread(void *arg) {
    int t = (int)(long)arg;
    if (t == 0) {
        for (int r = 0; r < 200; r++) {
            int v = rank * r, sum = 0;
            MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, tcomm[2]);
            CHECK(sum == r * size * (size - 1) / 2, "coll round %d: allreduce %d", r, sum);
            int b[64];
            for (int i = 0; i < 64; i++)
                b[i] = rank == r % size ? r + i : -1;
            MPI_Bcast(b, 64, MPI_INT, r % size, tcomm[2]);
            for (int i = 0; i < 64; i++)
                CHECK(b[i] == r + i, "coll round %d: bcast [%d] = %d", r, i, b[i]);
            if (r % 10 == 0)
                MPI_Barrier(tcomm[2]);
        }
    } else if (t == 1) {
        size_t cap = 98304;
        unsigned char *out = malloc(cap), *in = malloc(cap);
        int right = (rank + 1) % size, left = (rank + size - 1) % size;
        for (int seq = 0; seq < 100; seq++) {
            size_t n_out = msg_len(rank, 9, seq), n_in = msg_len(left, 9, seq);
            fill(out, n_out, rank, 9, seq);
            MPI_Status st;
            MPI_Sendrecv(out, (int)n_out, MPI_BYTE, right, seq, in, (int)cap, MPI_BYTE, left, seq,
                         tcomm[3], &st);
            int cnt;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(cnt == (int)n_in && !bad_bytes(in, n_in, left, 9, seq),
                  "p2p beside coll seq %d: %d bytes, or bad ones", seq, cnt);
        }
        free(out);
        free(in);
    }
    return NULL;
}

/* ---- bsend: a flush waits while another thread of the process still has to call MPI ---- */
#define BS_LEN 98304
static int bs_started;

static void *bsend_thread(void *arg) {
    int t = (int)(long)arg;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    for (int round = 0; round < 2; round++) {
        if (t == 0) {
            int bsize = BS_LEN + MPI_BSEND_OVERHEAD;
            char *buf = malloc(bsize);
            unsigned char *out = malloc(BS_LEN);
            fill(out, BS_LEN, rank, 20 + round, 0);
            if (round == 0)
                MPI_Buffer_attach(buf, bsize);
            else
                MPI_Comm_attach_buffer(tcomm[0], buf, bsize);
            MPI_Bsend(out, BS_LEN, MPI_BYTE, right, 20 + round, tcomm[0]);
            __atomic_store_n(&bs_started, round + 1, __ATOMIC_RELEASE);
            void *back;
            int n;
            if (round == 0) {
                MPI_Buffer_detach(&back, &n);
            } else {
                MPI_Comm_flush_buffer(tcomm[0]);
                MPI_Comm_detach_buffer(tcomm[0], &back, &n);
            }
            CHECK(back == buf && n == bsize, "bsend round %d: detach gave %p %d", round, back, n);
            free(buf);
            free(out);
        } else if (t == 1) {
            while (__atomic_load_n(&bs_started, __ATOMIC_ACQUIRE) != round + 1)
                usleep(1000);
            usleep(20000); /* thread 0 is in its flush by now */
            int token = rank, got = -1;
            MPI_Sendrecv(&token, 1, MPI_INT, right, 30 + round, &got, 1, MPI_INT, left, 30 + round,
                         tcomm[1], MPI_STATUS_IGNORE);
            CHECK(got == left, "bsend round %d: token %d from %d", round, got, left);
            unsigned char *in = malloc(BS_LEN);
            MPI_Status st;
            MPI_Recv(in, BS_LEN, MPI_BYTE, left, 20 + round, tcomm[0], &st);
            int cnt;
            MPI_Get_count(&st, MPI_BYTE, &cnt);
            CHECK(cnt == BS_LEN && !bad_bytes(in, BS_LEN, left, 20 + round, 0),
                  "bsend round %d: %d bytes, or bad ones", round, cnt);
            free(in);
        }
    }
    return NULL;
}

int main(int argc, char **argv) {
    const char *only = argc > 1 ? argv[1] : "";
    int provided = -1, flag;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Init_thread provided %d", provided);
    MPI_Query_thread(&provided);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Query_thread %d", provided);
    MPI_Is_thread_main(&flag);
    CHECK(flag, "MPI_Is_thread_main on the main thread");
    if (size > 64) {
        if (rank == 0)
            printf("at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int t = 0; t < NT; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]);

    if (!*only || !strcmp(only, "p2p"))
        run_threads(p2p_thread);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "any"))
        any_phase(0);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "mprobe"))
        any_phase(1);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "comm"))
        run_threads(comm_thread);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "collp2p"))
        run_threads(collp2p_thread);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "dupfree"))
        run_threads(dupfree_thread);
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "group"))
        group_phase();
    MPI_Barrier(MPI_COMM_WORLD);
    if (!*only || !strcmp(only, "bsend"))
        run_threads(bsend_thread);

    for (int t = 0; t < NT; t++)
        MPI_Comm_free(&tcomm[t]);
    int total = 0;
    MPI_Reduce(&errs, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf(" No Errors\n");
        else
            printf(" Found %d errors\n", total);
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
