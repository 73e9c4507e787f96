/* Slurm's libpmi2 against a prsh PMI server: MPI_Comm_spawn_multiple's
 * PMI2_Job_Spawn and the name service, as MPICH's PMI-2 builds call them.
 *   pmi2spawn parent   spawn two programs (argv with spaces, '=' and ';',
 *                      info per command, the parent's port as preput),
 *                      then publish, look up and unpublish a name
 *   pmi2spawn refused  a spawn the server refuses must fail, and the
 *                      conversation go on
 *   pmi2spawn child    a spawned rank: PMI2_Init says spawned, and the
 *                      parent's port is in its own job's key-value space */
#include <slurm/pmi2.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                           \
    do {                                                                      \
        int rc_ = (call);                                                     \
        if (rc_ != PMI2_SUCCESS) {                                            \
            fprintf(stderr, "%s returned %d\n", #call, rc_);                  \
            return 1;                                                         \
        }                                                                     \
    } while (0)

#define EXPECT(cond, ...)                                                     \
    do {                                                                      \
        if (!(cond)) {                                                        \
            fprintf(stderr, __VA_ARGS__);                                     \
            fputc('\n', stderr);                                              \
            return 1;                                                         \
        }                                                                     \
    } while (0)

#define PORT "tag#0$description#vm$port#59471$ifname#192.0.2.2$"

static int spawn(char *jobid, int len, int errors[5])
{
    const char *cmds[] = {"./master", "./worker"};
    const char *args0[] = {"child-arg one", "x=y;z"};
    const char **argvs[] = {args0, NULL};
    int argcs[] = {2, 0};
    int maxprocs[] = {2, 3};
    MPID_Info wdir = {.key = "wdir", .value = "/tmp"};
    const MPID_Info *infos[] = {&wdir, NULL};
    int infocounts[] = {1, 0};
    MPID_Info port = {.key = "PARENT_ROOT_PORT_NAME", .value = PORT};
    const MPID_Info *preput[] = {&port};
    return PMI2_Job_Spawn(2, cmds, argcs, argvs, maxprocs, infocounts, infos, 1, preput, jobid, len, errors);
}

static int parent(void)
{
    char jobid[256] = "", port[256] = "";
    int errors[5] = {-1, -1, -1, -1, -1};
    CHECK(spawn(jobid, sizeof jobid, errors));
    EXPECT(strcmp(jobid, "kvs_prsh_test_1") == 0, "spawned job \"%s\", want kvs_prsh_test_1", jobid);
    for (int i = 0; i < 5; i++)
        EXPECT(errors[i] == 0, "error code %d of rank %d", errors[i], i);

    CHECK(PMI2_Nameserv_publish("ocean", NULL, PORT));
    EXPECT(PMI2_Nameserv_publish("ocean", NULL, "other") != PMI2_SUCCESS, "a second publish succeeded");
    CHECK(PMI2_Nameserv_lookup("ocean", NULL, port, sizeof port));
    EXPECT(strcmp(port, PORT) == 0, "looked up \"%s\", want \"%s\"", port, PORT);
    CHECK(PMI2_Nameserv_unpublish("ocean", NULL));
    EXPECT(PMI2_Nameserv_lookup("ocean", NULL, port, sizeof port) != PMI2_SUCCESS, "found an unpublished name");
    printf("pmi2 parent: spawned %s, name service OK\n", jobid);
    return 0;
}

static int refused(void)
{
    char jobid[256] = "";
    int errors[5];
    EXPECT(spawn(jobid, sizeof jobid, errors) != PMI2_SUCCESS, "a refused spawn succeeded (job \"%s\")", jobid);
    printf("pmi2 refused spawn failed: OK\n");
    return 0;
}

static int child(int spawned)
{
    char jobid[256], port[1024];
    int len;
    EXPECT(spawned, "PMI2_Init says not spawned");
    CHECK(PMI2_Job_GetId(jobid, sizeof jobid));
    CHECK(PMI2_KVS_Get(jobid, PMI2_ID_NULL, "PARENT_ROOT_PORT_NAME", port, sizeof port, &len));
    EXPECT(strcmp(port, PORT) == 0, "parent's port \"%s\", want \"%s\"", port, PORT);
    printf("pmi2 child of its parent: OK\n");
    return 0;
}

int main(int argc, char **argv)
{
    int spawned, size, rank, appnum, rc = 1;
    CHECK(PMI2_Init(&spawned, &size, &rank, &appnum));
    if (argc > 1 && strcmp(argv[1], "parent") == 0)
        rc = spawned ? (fprintf(stderr, "parent says spawned\n"), 1) : parent();
    else if (argc > 1 && strcmp(argv[1], "refused") == 0)
        rc = refused();
    else if (argc > 1 && strcmp(argv[1], "child") == 0)
        rc = child(spawned);
    if (rc == 0)
        CHECK(PMI2_Finalize());
    return rc;
}
