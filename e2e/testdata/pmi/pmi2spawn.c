/* Slurm's libpmi2 asks the launcher for MPI_Comm_spawn's new job
 * (PMI2_Job_Spawn of 2 copies of /bin/true, the parent's port as preput)
 * and for the name service; each call's outcome is one line. */
#include <slurm/pmi2.h>
#include <stdio.h>

int main(void)
{
    int spawned, size, rank, appnum, errors[2];
    char jobid[256] = "", port[256] = "";
    if (PMI2_Init(&spawned, &size, &rank, &appnum) != PMI2_SUCCESS)
        return 1;
    const char *cmds[] = {"/bin/true"};
    int argcs[] = {0}, maxprocs[] = {2}, infocounts[] = {0};
    const char **argvs[] = {NULL};
    const MPID_Info *infos[] = {NULL};
    MPID_Info pp = {.key = "PARENT_ROOT_PORT_NAME", .value = "port-of-rank-0"};
    const MPID_Info *preput[] = {&pp};
    if (rank == 0) {
        int rc = PMI2_Job_Spawn(1, cmds, argcs, argvs, maxprocs, infocounts, infos, 1, preput,
                                jobid, sizeof jobid, errors);
        printf("rank 0 spawn: %s %s\n", rc == PMI2_SUCCESS ? "ok" : "failed", jobid);
        rc = PMI2_Nameserv_publish("prsh-e2e", NULL, "port-of-rank-0");
        printf("rank 0 publish: %s\n", rc == PMI2_SUCCESS ? "ok" : "failed");
    }
    if (PMI2_KVS_Fence() != PMI2_SUCCESS)
        return 1;
    int rc = PMI2_Nameserv_lookup("prsh-e2e", NULL, port, sizeof port);
    printf("rank %d lookup: %s %s\n", rank, rc == PMI2_SUCCESS ? "ok" : "failed", port);
    return PMI2_Finalize() == PMI2_SUCCESS ? 0 : 1;
}
