/* PMI micro-benchmark through Slurm's libpmi2 (cc -I/usr/include/slurm ...
 * -lpmi2), so that the same binary runs under prsh's mpirun and under
 * MPICH's mpiexec.hydra, which both serve PMI-2 on PMI_FD.
 *
 *   pmibench [ROUNDS [ext]]
 *
 * Each round, every measure starting from a barrier:
 *   fence   every rank puts one 32-byte value under a fresh key and fences
 *   get1    then gets its right neighbour's key
 *   modex1  fence + get1: the time until the neighbour's value is in hand
 *   getall  every rank gets every rank's key (its own included)
 *   getsolo rank 0 alone gets every key, the others idle: the cost of the
 *           gets themselves, without the other ranks' competing for the
 *           server (and, on an emulated cluster, for the same cores)
 * and with "ext" (prsh only: Hydra has neither):
 *   ring    PMIX_Ring (Slurm's extension)
 *   gather  prsh's allgather of the same 32-byte value, written as a raw
 *           PMI-2 frame on the PMI socket (modex/pmi/EXTENSIONS.md)
 * Hydra's PMI-2 fence returns at once and its gets wait for the keys, so
 * fence and get1 alone do not compare between launchers; modex1 does.
 * Every value got is checked. A round's time for a measure is that of its
 * slowest rank, since the job waits for it; rank 0 prints the median over
 * the rounds of each, in microseconds, as one line:
 *
 *   pmibench ranks=N rounds=R getall0_us=.. fence_us=.. get1_us=.. modex1_us=.. getall_us=.. [ring_us=.. gather_us=..]
 *
 * getall0 is the first round's getall: Hydra's gets scan every key put so
 * far, so its later rounds are slower than a job's single exchange.
 * The per-rank times travel to rank 0 through the KVS once, after the
 * timed rounds. Any failure is one line on stderr and exit status 1. */
#include <pmi2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { FENCE, GET1, MODEX1, GETALL, GETSOLO, RING, GATHER, MEASURES };
static const char *names[MEASURES] = {"fence", "get1", "modex1", "getall", "getsolo", "ring", "gather"};
enum { MAXROUNDS = 20, VALLEN = 32 };

static int rank = -1, size;
static char jobid[256];

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "pmibench: rank %d: ", rank);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

#define CHECK(call)                                                           \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != PMI2_SUCCESS)                                              \
            die("%s returned %d", #call, rc_);                                \
    } while (0)

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* value_of is rank r's value in round i: exactly VALLEN characters. */
static void value_of(int i, int r, char *buf)
{
    int n = snprintf(buf, VALLEN + 1, "round %d rank %d ", i % 1000, r % 1000000);
    memset(buf + n, '.', VALLEN - n);
    buf[VALLEN] = '\0';
}

static void get_checked(int i, int r)
{
    char key[64], want[VALLEN + 1], got[PMI2_MAX_VALLEN];
    int len;
    snprintf(key, sizeof key, "b%d-%d", i, r);
    value_of(i, r, want);
    CHECK(PMI2_KVS_Get(jobid, r, key, got, sizeof got, &len));
    if (strcmp(got, want) != 0)
        die("%s = \"%s\", want \"%s\"", key, got, want);
}

/* write_all and read_all move exactly n bytes on the PMI socket. */
static void write_all(int fd, const char *p, size_t n)
{
    for (ssize_t w; n > 0; p += w, n -= w)
        if ((w = write(fd, p, n)) <= 0)
            die("write on the PMI socket failed");
}

static void read_all(int fd, char *p, size_t n)
{
    for (ssize_t r; n > 0; p += r, n -= r)
        if ((r = read(fd, p, n)) <= 0)
            die("read on the PMI socket failed");
}

/* allgather sends prsh's allgather command itself, between libpmi2 calls:
 * libpmi2 has no such call, but it reads exactly one frame per request,
 * so the socket holds nothing of ours when we use it. The values contain
 * no ';', so no unescaping is needed; only the count and rank 0's value
 * are checked, as the lengths are all VALLEN. */
static void allgather(int fd, int i)
{
    static char reply[1000000];
    char val[VALLEN + 1], req[128], hdr[7] = {0};
    value_of(i, rank, val);
    int n = snprintf(req + 6, sizeof req - 6, "cmd=allgather;value=%s;", val);
    snprintf(hdr, sizeof hdr, "%-6d", n);
    memcpy(req, hdr, 6);
    write_all(fd, req, 6 + n);
    read_all(fd, hdr, 6);
    int len = atoi(hdr);
    if (len <= 0 || len >= (int)sizeof reply)
        die("allgather: reply length \"%s\"", hdr);
    read_all(fd, reply, len);
    reply[len] = '\0';
    char want[64], first[VALLEN + 1];
    snprintf(want, sizeof want, "cmd=allgather-response;rc=0;count=%d;", size);
    value_of(i, 0, first);
    char *values = strstr(reply, ";values=");
    if (strncmp(reply, want, strlen(want)) != 0 || values == NULL || strncmp(values + 8, first, VALLEN) != 0)
        die("allgather: reply \"%.200s\"", reply);
}

static void ring(int i)
{
    char val[VALLEN + 1], left[PMI2_MAX_VALLEN], right[PMI2_MAX_VALLEN], want[VALLEN + 1];
    int rrank, rsize;
    value_of(i, rank, val);
    CHECK(PMIX_Ring(val, &rrank, &rsize, left, right, sizeof left));
    value_of(i, (rank + 1) % size, want);
    if (rrank != rank || rsize != size || strcmp(right, want) != 0)
        die("ring: rank %d of %d right \"%s\"", rrank, rsize, right);
}

/* barrier: a PMI-2 fence alone is not one under Hydra, where it returns at
 * once and a get waits only until the key it asks for is put, or, for a
 * key nobody puts, until every rank has fenced as often as the asker. So
 * a fence and a get of such a key make a barrier under both launchers,
 * and add no key to the store (Hydra's gets scan every key ever put). */
static void barrier(void)
{
    char got[PMI2_MAX_VALLEN];
    int len;
    CHECK(PMI2_KVS_Fence());
    if (PMI2_KVS_Get(jobid, PMI2_ID_NULL, "no-such-key", got, sizeof got, &len) == PMI2_SUCCESS)
        die("no-such-key found: \"%s\"", got);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int spawned, appnum;
    int rounds = argc > 1 ? atoi(argv[1]) : 10;
    int ext = argc > 2 && strcmp(argv[2], "ext") == 0;
    int measures = ext ? MEASURES : RING; /* RING and GATHER come last */
    double t[MEASURES][MAXROUNDS];
    char key[64], val[PMI2_MAX_VALLEN];

    if (rounds < 1 || rounds > MAXROUNDS)
        die("usage: pmibench [ROUNDS (1-%d) [ext]]", MAXROUNDS);
    CHECK(PMI2_Init(&spawned, &size, &rank, &appnum));
    CHECK(PMI2_Job_GetId(jobid, sizeof jobid));
    const char *fdenv = getenv("PMI_FD");
    int fd = fdenv ? atoi(fdenv) : -1;

    for (int i = 0; i < rounds; i++) {
        barrier();
        double t0 = now_us();
        snprintf(key, sizeof key, "b%d-%d", i, rank);
        value_of(i, rank, val);
        CHECK(PMI2_KVS_Put(key, val));
        CHECK(PMI2_KVS_Fence());
        double t1 = now_us();
        get_checked(i, (rank + 1) % size);
        double t2 = now_us();
        t[FENCE][i] = t1 - t0, t[GET1][i] = t2 - t1, t[MODEX1][i] = t2 - t0;
        barrier();
        t0 = now_us();
        for (int r = 0; r < size; r++)
            get_checked(i, r);
        t[GETALL][i] = now_us() - t0;
        barrier();
        t0 = now_us();
        if (rank == 0)
            for (int r = 0; r < size; r++)
                get_checked(i, r);
        t[GETSOLO][i] = rank == 0 ? now_us() - t0 : 0;
        if (ext) {
            barrier();
            t0 = now_us();
            ring(i);
            t[RING][i] = now_us() - t0;
            barrier();
            t0 = now_us();
            allgather(fd, i);
            t[GATHER][i] = now_us() - t0;
        }
    }

    /* Hand the times to rank 0: "t0 t1 ..." measure by measure. */
    int n = 0;
    for (int m = 0; m < measures; m++)
        for (int i = 0; i < rounds; i++)
            n += snprintf(val + n, sizeof val - n, "%.0f ", t[m][i]);
    snprintf(key, sizeof key, "times-%d", rank);
    CHECK(PMI2_KVS_Put(key, val));
    CHECK(PMI2_KVS_Fence());
    if (rank == 0) {
        double worst[MEASURES][MAXROUNDS] = {{0}};
        for (int r = 0; r < size; r++) {
            int len;
            snprintf(key, sizeof key, "times-%d", r);
            CHECK(PMI2_KVS_Get(jobid, r, key, val, sizeof val, &len));
            char *p = val;
            for (int m = 0; m < measures; m++)
                for (int i = 0; i < rounds; i++) {
                    double x = strtod(p, &p);
                    if (x > worst[m][i])
                        worst[m][i] = x;
                }
        }
        printf("pmibench ranks=%d rounds=%d getall0_us=%.0f", size, rounds, worst[GETALL][0]);
        for (int m = 0; m < measures; m++) {
            qsort(worst[m], rounds, sizeof(double), cmp);
            double med = rounds % 2 ? worst[m][rounds / 2] : (worst[m][rounds / 2 - 1] + worst[m][rounds / 2]) / 2;
            printf(" %s_us=%.0f", names[m], med);
        }
        printf("\n");
    }
    CHECK(PMI2_Finalize());
    return 0;
}
