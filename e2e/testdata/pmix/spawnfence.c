// A parent job and the child job it starts fence over both namespaces
// without connecting, collecting data.
//   spawnfence NP   as the parent: rank 0 starts NP children running
//                   this program (PMIx_Spawn) and publishes their
//                   namespace, which the other ranks look up; a child
//                   finds its parent's namespace in PMIX_PARENT_ID.
// Every rank puts "parent rank R" or "child rank R", fences over both
// namespaces collecting data, listing its own job first (so the two jobs'
// lists differ), prints the fence's status, gets every other rank's
// value of both jobs, and fences over both once more, so that neither
// job ends while the other still gets its data.
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "getwithin.h"

// getAll prints the value of every rank of job nspace but this one.
static void getAll(const char *self, pmix_proc_t me, const char *nspace) {
    pmix_value_t *v = NULL;
    pmix_status_t rc = getWithin(nspace, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &v);
    if (rc != PMIX_SUCCESS) {
        printf("%s rank %u: the size of %s: %s\n", self, me.rank, nspace, PMIx_Error_string(rc));
        return;
    }
    for (uint32_t r = 0, n = v->data.uint32; r < n; r++) {
        if (r == me.rank && strcmp(nspace, me.nspace) == 0) {
            continue;
        }
        pmix_value_t *got = NULL;
        if ((rc = getWithin(nspace, r, "prsh.value", &got)) == PMIX_SUCCESS && got->type == PMIX_STRING) {
            printf("%s rank %u got \"%s\"\n", self, me.rank, got->data.string);
        } else {
            printf("%s rank %u: get from rank %u of %s: %s\n", self, me.rank, r, nspace, PMIx_Error_string(rc));
        }
    }
}

static void fenceBoth(const char *self, pmix_proc_t me, const char *other) {
    char mine[64];
    snprintf(mine, sizeof mine, "%s rank %u", self, me.rank);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, mine, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, "prsh.value", &v);
    PMIx_Commit();
    pmix_proc_t both[2];
    PMIX_LOAD_PROCID(&both[0], me.nspace, PMIX_RANK_WILDCARD);
    PMIX_LOAD_PROCID(&both[1], other, PMIX_RANK_WILDCARD);
    bool yes = true;
    pmix_info_t collect;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    pmix_status_t rc = PMIx_Fence(both, 2, &collect, 1);
    printf("%s rank %u: fence over both jobs: %s\n", self, me.rank, PMIx_Error_string(rc));
    if (rc != PMIX_SUCCESS) {
        return;
    }
    getAll(self, me, me.nspace);
    getAll(self, me, other);
    if ((rc = PMIx_Fence(both, 2, NULL, 0)) != PMIX_SUCCESS) {
        printf("%s rank %u: last fence: %s\n", self, me.rank, PMIx_Error_string(rc));
    }
}

// children starts np children (rank 0) or looks their namespace up.
static pmix_status_t children(pmix_proc_t me, const char *prog, int np, char *ns) {
    pmix_status_t rc;
    if (me.rank == 0) {
        pmix_app_t app;
        PMIX_APP_CONSTRUCT(&app);
        app.cmd = strdup(prog);
        app.maxprocs = np;
        app.argv = calloc(2, sizeof(char *));
        app.argv[0] = strdup(prog);
        pmix_nspace_t child;
        if ((rc = PMIx_Spawn(NULL, 0, &app, 1, child)) != PMIX_SUCCESS) {
            return rc;
        }
        strcpy(ns, child);
        pmix_info_t info;
        PMIX_INFO_LOAD(&info, "prsh.child", ns, PMIX_STRING);
        return PMIx_Publish(&info, 1);
    }
    bool yes = true;
    int seconds = 60;
    pmix_info_t wait[2];
    PMIX_INFO_LOAD(&wait[0], PMIX_WAIT, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&wait[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_pdata_t pd;
    PMIX_PDATA_CONSTRUCT(&pd);
    PMIX_LOAD_KEY(pd.key, "prsh.child");
    if ((rc = PMIx_Lookup(&pd, 1, wait, 2)) == PMIX_SUCCESS) {
        snprintf(ns, PMIX_MAX_NSLEN + 1, "%s", pd.value.data.string);
    }
    return rc;
}

int main(int argc, char **argv) {
    pmix_proc_t me, job;
    pmix_value_t *v = NULL;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "usage: spawnfence NP (under a PMIx server)\n");
        return 2;
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    if (PMIx_Get(&job, PMIX_SPAWNED, NULL, 0, &v) == PMIX_SUCCESS && v->data.flag) {
        if (PMIx_Get(&job, PMIX_PARENT_ID, NULL, 0, &v) == PMIX_SUCCESS && v->type == PMIX_PROC) {
            fenceBoth("child", me, v->data.proc->nspace);
        } else {
            printf("child rank %u: no parent\n", me.rank);
        }
    } else if (argc == 2) {
        char ns[PMIX_MAX_NSLEN + 1];
        pmix_status_t rc = children(me, argv[0], atoi(argv[1]), ns);
        if (rc == PMIX_SUCCESS) {
            fenceBoth("parent", me, ns);
        } else {
            printf("parent rank %u: the child job: %s\n", me.rank, PMIx_Error_string(rc));
        }
    }
    PMIx_Finalize(NULL, 0);
    return 0;
}
