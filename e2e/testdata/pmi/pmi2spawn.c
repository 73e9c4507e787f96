/* Slurm's libpmi2 asks the launcher for MPI_Comm_spawn's new job
 * (PMI2_Job_Spawn of 2 copies of this program, the parent's port as
 * preput) and for the name service; each call's outcome is one line. A
 * child ("pmi2spawn child") says whether PMI2_Init saw it spawned and
 * what its parent preput. "pmi2spawn add-host=H:S" spawns the children
 * on H, which the job may not have. */
#include <slurm/pmi2.h>
#include <stdio.h>
#include <string.h>

static int child(int spawned, int rank)
{
    char jobid[256] = "", port[256] = "";
    int len = 0;
    if (PMI2_Job_GetId(jobid, sizeof jobid) != PMI2_SUCCESS ||
        PMI2_KVS_Get(jobid, PMI2_ID_NULL, "PARENT_ROOT_PORT_NAME", port, sizeof port, &len) != PMI2_SUCCESS)
        strcpy(port, "(none)");
    printf("child %d: spawned %d, parent's port %s\n", rank, spawned, port);
    return PMI2_Finalize() == PMI2_SUCCESS ? 0 : 1;
}

int main(int argc, char **argv)
{
    int spawned, size, rank, appnum, errors[2];
    char jobid[256] = "", port[256] = "";
    if (PMI2_Init(&spawned, &size, &rank, &appnum) != PMI2_SUCCESS)
        return 1;
    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child(spawned, rank);
    const char *cmds[] = {argv[0]};
    const char *args[] = {"child"};
    int argcs[] = {1}, maxprocs[] = {2}, infocounts[] = {0};
    const char **argvs[] = {args};
    const MPID_Info *infos[] = {NULL};
    MPID_Info host = {.key = "add-host"};
    if (argc > 1 && strncmp(argv[1], "add-host=", 9) == 0) { /* on hosts the job may not have */
        host.value = argv[1] + 9;
        infos[0] = &host;
        infocounts[0] = 1;
    }
    MPID_Info pp = {.key = "PARENT_ROOT_PORT_NAME", .value = "port-of-rank-0"};
    const MPID_Info *preput[] = {&pp};
    if (rank == 0) {
        int rc = PMI2_Job_Spawn(1, cmds, argcs, argvs, maxprocs, infocounts, infos, 1, preput,
                                jobid, sizeof jobid, errors);
        printf("rank 0 spawn: %s\n", rc == PMI2_SUCCESS && strlen(jobid) > 0 ? "ok" : "failed");
        rc = PMI2_Nameserv_publish("prsh-e2e", NULL, "port-of-rank-0");
        printf("rank 0 publish: %s\n", rc == PMI2_SUCCESS ? "ok" : "failed");
    }
    if (PMI2_KVS_Fence() != PMI2_SUCCESS)
        return 1;
    int rc = PMI2_Nameserv_lookup("prsh-e2e", NULL, port, sizeof port);
    printf("rank %d lookup: %s %s\n", rank, rc == PMI2_SUCCESS ? "ok" : "failed", port);
    return PMI2_Finalize() == PMI2_SUCCESS ? 0 : 1;
}
