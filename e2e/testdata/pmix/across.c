// Two jobs meet through the name service and fence over both.
//   across SELF OTHER   every rank puts "SELF early R"; rank 0 publishes
//                       its namespace under SELF; every rank looks OTHER
//                       up (waiting for it), connects both namespaces,
//                       gets the early value of the other job's last rank
//                       (from that rank's node: a direct modex across
//                       jobs), fences over both namespaces (all got
//                       it), puts "SELF rank R", fences over both
//                       namespaces collecting data, and disconnects.
//                       Both jobs list the two namespaces in the same
//                       order (sorted), as PMIx wants of a fence's
//                       members.
//   mixed SELF OTHER    the same, each job listing its own namespace
//                       first (the nodes' lists then differ)
//   fence SELF OTHER    the fence alone, without connect: it prints the
//                       fence's status only
//   lookup KEY          a lookup of KEY that waits at most 1 second:
//                       prints its status.
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pmix_status_t lookup(const char *key, int seconds, char **value) {
    bool yes = true;
    pmix_info_t wait[2];
    PMIX_INFO_LOAD(&wait[0], PMIX_WAIT, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&wait[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_pdata_t pd;
    PMIX_PDATA_CONSTRUCT(&pd);
    PMIX_LOAD_KEY(pd.key, key);
    pmix_status_t rc = PMIx_Lookup(&pd, 1, wait, 2);
    if (rc == PMIX_SUCCESS && pd.value.type == PMIX_STRING) {
        *value = strdup(pd.value.data.string);
    }
    return rc;
}

static void get(const char *self, pmix_proc_t me, const char *nspace, uint32_t rank, const char *key) {
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, nspace, rank);
    pmix_value_t *got = NULL;
    pmix_status_t rc = PMIx_Get(&p, key, NULL, 0, &got);
    if (rc == PMIX_SUCCESS && got->type == PMIX_STRING) {
        printf("%s rank %u got \"%s\"\n", self, me.rank, got->data.string);
    } else {
        printf("%s rank %u: get %s: %s\n", self, me.rank, key, PMIx_Error_string(rc));
    }
}

static void put(const char *key, const char *format, const char *self, uint32_t rank) {
    char mine[64];
    snprintf(mine, sizeof mine, format, self, rank);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, mine, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, key, &v);
    PMIx_Commit();
}

static bool selfFirst;

static void across(pmix_proc_t me, const char *self, const char *other, bool connect) {
    bool yes = true;
    put("prsh.early", "%s early %u", self, me.rank);
    if (me.rank == 0) {
        pmix_info_t info;
        PMIX_INFO_LOAD(&info, self, me.nspace, PMIX_STRING);
        pmix_status_t rc = PMIx_Publish(&info, 1);
        if (rc != PMIX_SUCCESS) {
            printf("%s rank 0: publish: %s\n", self, PMIx_Error_string(rc));
        }
    }
    char *peer = NULL;
    pmix_status_t rc = lookup(other, 60, &peer);
    if (rc != PMIX_SUCCESS) {
        printf("%s rank %u: lookup %s: %s\n", self, me.rank, other, PMIx_Error_string(rc));
        return;
    }
    pmix_proc_t both[2];
    bool mineFirst = selfFirst || strcmp(me.nspace, peer) < 0;
    PMIX_LOAD_PROCID(&both[mineFirst ? 0 : 1], me.nspace, PMIX_RANK_WILDCARD);
    PMIX_LOAD_PROCID(&both[mineFirst ? 1 : 0], peer, PMIX_RANK_WILDCARD);
    if (connect && (rc = PMIx_Connect(both, 2, NULL, 0)) != PMIX_SUCCESS) {
        printf("%s rank %u: connect: %s\n", self, me.rank, PMIx_Error_string(rc));
        return;
    }
    if (connect) {
        pmix_value_t *size = NULL;
        pmix_proc_t job;
        PMIX_LOAD_PROCID(&job, peer, PMIX_RANK_WILDCARD);
        if ((rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &size)) != PMIX_SUCCESS) {
            printf("%s rank %u: the other job's size: %s\n", self, me.rank, PMIx_Error_string(rc));
            return;
        }
        get(self, me, peer, size->data.uint32 - 1, "prsh.early");
        // Every rank has its early value before any puts more: the
        // owner's server then serves the early value alone.
        PMIx_Fence(both, 2, NULL, 0);
    }
    put("prsh.across", "%s rank %u", self, me.rank);
    pmix_info_t collect;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(both, 2, &collect, 1);
    printf("%s rank %u: fence over both jobs: %s\n", self, me.rank, PMIx_Error_string(rc));
    if (!connect) {
        return;
    }
    pmix_value_t *size = NULL;
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, peer, PMIX_RANK_WILDCARD);
    if (rc == PMIX_SUCCESS && PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &size) == PMIX_SUCCESS) {
        for (uint32_t r = 0; r < size->data.uint32; r++) {
            get(self, me, peer, r, "prsh.across");
        }
    }
    if ((rc = PMIx_Disconnect(both, 2, NULL, 0)) != PMIX_SUCCESS) {
        printf("%s rank %u: disconnect: %s\n", self, me.rank, PMIx_Error_string(rc));
    }
}

int main(int argc, char **argv) {
    pmix_proc_t me;
    if (argc < 3 || PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "usage: across SELF OTHER | mixed SELF OTHER | fence SELF OTHER | lookup KEY (under a PMIx server)\n");
        return 2;
    }
    if (strcmp(argv[1], "lookup") == 0) {
        char *value = NULL;
        printf("lookup %s: %s\n", argv[2], PMIx_Error_string(lookup(argv[2], 1, &value)));
    } else if (strcmp(argv[1], "fence") == 0 && argc == 4) {
        across(me, argv[2], argv[3], false);
    } else if (strcmp(argv[1], "mixed") == 0 && argc == 4) {
        selfFirst = true;
        across(me, argv[2], argv[3], true);
    } else if (argc == 3) {
        across(me, argv[1], argv[2], true);
    }
    PMIx_Finalize(NULL, 0);
    return 0;
}
