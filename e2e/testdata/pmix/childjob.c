// A parent that starts a child job with PMIx_Spawn, without MPI, and the
// children it starts (the same program). As the parent (job 0):
//   childjob NP [missing|fail=R:S|sleep=SEC|host=H,H|addhost=H:S,H:S|addhostfile=F]...
// rank 0 asks for NP children running this program ("missing": a
// program that does not exist; host=: on those hosts, PMIX_HOST) and
// says it did, or prints the error and exits with 3; the other ranks
// just finalise. As a child
// (PMIX_SPAWNED), each prints its rank, node and parent, sleeps SEC
// seconds first with sleep=SEC, and rank R exits with S with fail=R:S.
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int child(pmix_proc_t *me, int argc, char **argv) {
    pmix_proc_t job;
    pmix_value_t *v = NULL;
    char host[256] = "?", parent[300] = "?";
    uint32_t size = 0;
    PMIX_LOAD_PROCID(&job, me->nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &v) == PMIX_SUCCESS)
        size = v->data.uint32;
    if (PMIx_Get(me, PMIX_HOSTNAME, NULL, 0, &v) == PMIX_SUCCESS)
        snprintf(host, sizeof(host), "%s", v->data.string);
    if (PMIx_Get(&job, PMIX_PARENT_ID, NULL, 0, &v) == PMIX_SUCCESS && v->type == PMIX_PROC)
        snprintf(parent, sizeof(parent), "%s rank %u", v->data.proc->nspace, v->data.proc->rank);
    int status = 0;
    for (int i = 2; i < argc; i++) {
        int r, s;
        if (sscanf(argv[i], "fail=%d:%d", &r, &s) == 2 && (uint32_t)r == me->rank)
            status = s;
        if (sscanf(argv[i], "sleep=%d", &s) == 1)
            sleep(s);
    }
    printf("child %u of %u on %s (parent %s)\n", me->rank, size, host, parent);
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return status;
}

static int parent(pmix_proc_t *me, int argc, char **argv) {
    if (me->rank != 0 || argc < 2) {
        PMIx_Finalize(NULL, 0);
        return 0;
    }
    pmix_app_t app;
    PMIX_APP_CONSTRUCT(&app);
    app.cmd = strdup(argv[0]);
    app.maxprocs = atoi(argv[1]);
    app.argv = calloc(argc + 2, sizeof(char *));
    app.argv[0] = strdup(argv[0]);
    app.argv[1] = strdup("child");
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "missing") == 0) {
            free(app.cmd);
            app.cmd = strdup("/nonexistent/childjob");
            app.argv[0] = strdup(app.cmd);
        }
        app.argv[i] = strdup(argv[i]);
    }
    PMIX_INFO_CREATE(app.info, 2);
    for (int i = 2; i < argc && app.ninfo < 2; i++) {
        const char *key = strncmp(argv[i], "host=", 5) == 0           ? PMIX_HOST
                          : strncmp(argv[i], "addhost=", 8) == 0      ? PMIX_ADD_HOST
                          : strncmp(argv[i], "addhostfile=", 12) == 0 ? PMIX_ADD_HOSTFILE
                                                                      : NULL;
        if (key != NULL) {
            PMIX_INFO_LOAD(&app.info[app.ninfo], key, strchr(argv[i], '=') + 1, PMIX_STRING);
            app.ninfo++;
        }
    }
    pmix_nspace_t ns;
    pmix_status_t rc = PMIx_Spawn(NULL, 0, &app, 1, ns);
    if (rc != PMIX_SUCCESS) {
        printf("rank 0: PMIx_Spawn failed: %s\n", PMIx_Error_string(rc));
        fflush(stdout);
        PMIx_Finalize(NULL, 0);
        return 3;
    }
    printf("rank 0 started a child job of %d ranks\n", app.maxprocs);
    fflush(stdout);
    PMIx_Finalize(NULL, 0);
    return 0;
}

int main(int argc, char **argv) {
    pmix_proc_t me, job;
    pmix_value_t *v = NULL;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    int spawned = PMIx_Get(&job, PMIX_SPAWNED, NULL, 0, &v) == PMIX_SUCCESS && v->data.flag;
    if (spawned || (argc > 1 && strcmp(argv[1], "child") == 0))
        return child(&me, argc, argv);
    return parent(&me, argc, argv);
}
