/* A PMI-2 job through prsh's daemons, with Slurm's libpmi2
 * (cc -I/usr/include/slurm ... -lpmi2). One program, several roles, chosen
 * by argv[1]:
 *
 *   world MAPPING   every rank puts a key, fences, and gets every rank's
 *                   key; PMI_process_mapping must be MAPPING; on each node
 *                   the lowest local rank puts a node attribute only once
 *                   its node-mates are blocked in info-getnodeattr
 *                   wait=TRUE; a second put/fence/get round; finalize.
 *   kill R          rank R SIGKILLs itself while every other rank waits
 *                   in a fence that R never enters.
 *   idle R          rank R never enters the fence the others wait in; it
 *                   writes $MARKS/ready once they all wait, and sleeps.
 *   exit0 R         rank R exits 0 without fencing or finalizing while
 *                   the others wait in the fence.
 *
 * With WAITERS_IGNORE_TERM=1 the ranks waiting in the fence ignore
 * SIGTERM, as a program that cleans up on it would, so that a fence that
 * wrongly completes while the job is being ended is seen: they say so on
 * stderr before SIGKILL ends them.
 *
 * Order is made explicit, never left to timing: a rank about to block in a
 * PMI call first writes $MARKS/<name> holding its pid, and whoever must act
 * after it waits until that process is blocked reading its PMI socket
 * (/proc/PID/syscall shows read(3, ...)): its request is then on the
 * wire. The ranks print one line each to stdout; any failure is one line
 * on stderr and exit status 1. */
#include <pmi2.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank = -1;

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d: ", rank);
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

static const char *env(const char *name)
{
    const char *v = getenv(name);
    if (v == NULL || *v == '\0')
        die("%s is not set", name);
    return v;
}

static int env_int(const char *name) { return atoi(env(name)); }

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

/* mark writes $MARKS/name holding our pid, atomically (rename). */
static void mark(const char *name)
{
    char path[4096], tmp[4096 + 8];
    snprintf(path, sizeof path, "%s/%s", env("MARKS"), name);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (f == NULL || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f) != 0)
        die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path) != 0)
        die("cannot rename %s: %s", tmp, strerror(errno));
}

/* await_blocked waits (up to a minute) for $MARKS/name, then until the
 * process it names is blocked reading its PMI socket, descriptor 3. */
static void await_blocked(const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", env("MARKS"), name);
    int pid = 0;
    for (int i = 0; i < 60000 / 5; i++, sleep_ms(5)) {
        FILE *f = fopen(path, "r");
        if (f == NULL)
            continue;
        if (pid == 0 && fscanf(f, "%d", &pid) != 1)
            pid = 0;
        fclose(f);
        if (pid == 0)
            continue;
        char sys[64], arg[32];
        long nr;
        snprintf(sys, sizeof sys, "/proc/%d/syscall", pid);
        f = fopen(sys, "r");
        if (f == NULL)
            die("cannot read %s: %s", sys, strerror(errno));
        int n = fscanf(f, "%ld %31s", &nr, arg);
        fclose(f);
        /* x86-64: read 0, recvfrom 45; other architectures: trust the
         * mark and give the request a moment to reach the server */
#if defined(__x86_64__)
        if (n == 2 && (nr == 0 || nr == 45) && strcmp(arg, "0x3") == 0)
            return;
#else
        (void)n;
        (void)nr;
        sleep_ms(500);
        return;
#endif
    }
    die("%s (pid %d) never blocked on its PMI socket", name, pid);
}

static void value_of(int r, const char *what, char *buf, size_t len)
{
    snprintf(buf, len, "%s of rank %d: spaces, commas = equals, and (brackets)", what, r);
}

/* exchange puts one key, fences, and checks every rank's key. */
static void exchange(const char *jobid, int size, const char *what)
{
    char key[64], want[256], got[1024];
    int len;
    snprintf(key, sizeof key, "%s-%d", what, rank);
    value_of(rank, what, want, sizeof want);
    CHECK(PMI2_KVS_Put(key, want));
    CHECK(PMI2_KVS_Fence());
    for (int r = 0; r < size; r++) {
        snprintf(key, sizeof key, "%s-%d", what, r);
        value_of(r, what, want, sizeof want);
        memset(got, 0, sizeof got);
        CHECK(PMI2_KVS_Get(jobid, r, key, got, sizeof got, &len));
        if (strcmp(got, want) != 0)
            die("%s = \"%s\", want \"%s\"", key, got, want);
    }
}

static int world(const char *mapping, const char *jobid, int size)
{
    char map[1024], attr[1024], name[256];
    int found;
    const char *node = env("PRSH_TESTBED_NODE");
    int local = env_int("PRSH_LOCAL_RANK"), local_size = env_int("PRSH_LOCAL_SIZE");

    exchange(jobid, size, "key");

    CHECK(PMI2_Info_GetJobAttr("PMI_process_mapping", map, sizeof map, &found));
    if (!found || strcmp(map, mapping) != 0)
        die("PMI_process_mapping found=%d \"%s\", want \"%s\"", found, map, mapping);

    /* an attribute nobody puts, without waiting: not found, at once */
    CHECK(PMI2_Info_GetNodeAttr("no-such-attribute", attr, sizeof attr, &found, 0));
    if (found)
        die("no-such-attribute found: \"%s\"", attr);

    if (local == 0) {
        for (int l = 1; l < local_size; l++) {
            snprintf(name, sizeof name, "attr.%s.%d", node, l);
            await_blocked(name);
        }
        sleep_ms(200); /* not needed for correctness: the gets are sent */
        snprintf(attr, sizeof attr, "put by rank %d on %s", rank, node);
        CHECK(PMI2_Info_PutNodeAttr("node-attr", attr));
    } else {
        snprintf(name, sizeof name, "attr.%s.%d", node, local);
        mark(name);
        memset(attr, 0, sizeof attr);
        CHECK(PMI2_Info_GetNodeAttr("node-attr", attr, sizeof attr, &found, 1));
        if (!found)
            die("node-attr not found with wait=TRUE");
    }

    exchange(jobid, size, "again");

    CHECK(PMI2_Finalize());
    printf("rank %d of %d on %s: mapping %s: node-attr %s\n", rank, size, node, map, attr);
    return 0;
}

/* fence_others: every rank but the special one marks itself and waits in
 * a fence that must not complete. */
static void fence_others(const char *jobid, int special)
{
    char name[64];
    const char *ignore = getenv("WAITERS_IGNORE_TERM");
    if (ignore != NULL && strcmp(ignore, "1") == 0)
        signal(SIGTERM, SIG_IGN);
    CHECK(PMI2_KVS_Put("k", "v"));
    snprintf(name, sizeof name, "fence.%d", rank);
    mark(name);
    int rc = PMI2_KVS_Fence();
    die("the fence returned %d without rank %d", rc, special);
    (void)jobid;
}

static void await_others(int size, int special)
{
    char name[64];
    for (int r = 0; r < size; r++) {
        if (r == special)
            continue;
        snprintf(name, sizeof name, "fence.%d", r);
        await_blocked(name);
    }
}

int main(int argc, char **argv)
{
    int spawned, size, appnum;
    char jobid[256];

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 3)
        die("usage: pmi2job world MAPPING | kill RANK | idle RANK | exit0 RANK");
    CHECK(PMI2_Init(&spawned, &size, &rank, &appnum));
    if (rank != env_int("PRSH_RANK") || size != env_int("PRSH_SIZE"))
        die("PMI2_Init: rank %d of %d, want %d of %d", rank, size, env_int("PRSH_RANK"), env_int("PRSH_SIZE"));
    if (spawned || appnum != 0)
        die("PMI2_Init: spawned %d appnum %d, want 0 0", spawned, appnum);
    CHECK(PMI2_Job_GetId(jobid, sizeof jobid));

    const char *mode = argv[1];
    if (strcmp(mode, "world") == 0)
        return world(argv[2], jobid, size);

    int special = atoi(argv[2]);
    if (rank != special)
        fence_others(jobid, special);
    await_others(size, special);
    if (strcmp(mode, "kill") == 0) {
        kill(getpid(), SIGKILL);
    } else if (strcmp(mode, "idle") == 0) {
        mark("ready");
        for (;;)
            pause();
    } else if (strcmp(mode, "exit0") == 0) {
        exit(0);
    }
    die("unknown mode %s", mode);
}
