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
//   fence SELF OTHER    without connect: every rank puts "SELF rank R",
//                       fences over both namespaces collecting data, and
//                       gets the value of every other rank of both jobs
//                       (the server of a node that holds ranks of one
//                       job only must know the other's namespace by
//                       then); then once more with "SELF again R", every
//                       server knowing both namespaces before the fence;
//                       then fences over both once more, so that neither
//                       job ends while the other still gets its data
//   fence-mixed SELF OTHER  the same, each job listing its own namespace
//                       first
//   timeout SELF OTHER  without connect: every rank fences over both
//                       namespaces within 1 second, which OTHER's ranks
//                       never enter, prints its status, fences over its
//                       own job; then rank 0 publishes SELF-done
//   idle SELF OTHER     rank 0 publishes its namespace under SELF; every
//                       rank waits for OTHER-done (a lookup), then ends
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

#include "getwithin.h"

static void get(const char *self, pmix_proc_t me, const char *nspace, uint32_t rank, const char *key) {
    pmix_value_t *got = NULL;
    pmix_status_t rc = getWithin(nspace, rank, key, &got);
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

// sizeOf is the size of job nspace, or 0 (with a line) if unknown.
static uint32_t sizeOf(const char *self, pmix_proc_t me, const char *nspace) {
    pmix_value_t *size = NULL;
    pmix_status_t rc = getWithin(nspace, PMIX_RANK_WILDCARD, PMIX_JOB_SIZE, &size);
    if (rc != PMIX_SUCCESS) {
        printf("%s rank %u: the size of %s: %s\n", self, me.rank, nspace, PMIx_Error_string(rc));
        return 0;
    }
    return size->data.uint32;
}

// fenceGetAll puts "SELF <word> R" under key, fences over both jobs
// collecting data and gets key of every rank of both jobs but itself.
static pmix_status_t fenceGetAll(const char *self, pmix_proc_t me, const char *peer, pmix_proc_t both[2],
                                 const char *key, const char *word) {
    bool yes = true;
    char format[32];
    snprintf(format, sizeof format, "%%s %s %%u", word);
    put(key, format, self, me.rank);
    pmix_info_t collect;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    pmix_status_t rc = PMIx_Fence(both, 2, &collect, 1);
    printf("%s rank %u: fence over both jobs for %s: %s\n", self, me.rank, word, PMIx_Error_string(rc));
    if (rc != PMIX_SUCCESS) {
        return rc;
    }
    uint32_t mine = sizeOf(self, me, me.nspace), theirs = sizeOf(self, me, peer);
    for (uint32_t r = 0; r < mine; r++) {
        if (r != me.rank) {
            get(self, me, me.nspace, r, key);
        }
    }
    for (uint32_t r = 0; r < theirs; r++) {
        get(self, me, peer, r, key);
    }
    return PMIX_SUCCESS;
}

// publish publishes this rank's namespace under key.
static void publish(pmix_proc_t me, const char *self, const char *key) {
    pmix_info_t info;
    PMIX_INFO_LOAD(&info, key, me.nspace, PMIX_STRING);
    pmix_status_t rc = PMIx_Publish(&info, 1);
    if (rc != PMIX_SUCCESS) {
        printf("%s rank %u: publish %s: %s\n", self, me.rank, key, PMIx_Error_string(rc));
    }
}

// meet finds the other job's namespace (peer) and lists both jobs'
// processes, sorted or (selfFirst) this job's first; false if not found.
static bool meet(pmix_proc_t me, const char *self, const char *other, char **peer, pmix_proc_t both[2]) {
    if (me.rank == 0) {
        publish(me, self, self);
    }
    pmix_status_t rc = lookup(other, 60, peer);
    if (rc != PMIX_SUCCESS) {
        printf("%s rank %u: lookup %s: %s\n", self, me.rank, other, PMIx_Error_string(rc));
        return false;
    }
    bool mineFirst = selfFirst || strcmp(me.nspace, *peer) < 0;
    PMIX_LOAD_PROCID(&both[mineFirst ? 0 : 1], me.nspace, PMIX_RANK_WILDCARD);
    PMIX_LOAD_PROCID(&both[mineFirst ? 1 : 0], *peer, PMIX_RANK_WILDCARD);
    return true;
}

static void timeoutFence(pmix_proc_t me, const char *self, const char *other) {
    char *peer = NULL;
    pmix_proc_t both[2];
    if (!meet(me, self, other, &peer, both)) {
        return;
    }
    int seconds = 1;
    pmix_info_t timeout;
    PMIX_INFO_LOAD(&timeout, PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_status_t rc = PMIx_Fence(both, 2, &timeout, 1);
    printf("%s rank %u: fence over both jobs within 1 s: %s\n", self, me.rank, PMIx_Error_string(rc));
    pmix_proc_t job;
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    PMIx_Fence(&job, 1, NULL, 0); // every rank of this job timed out
    if (me.rank == 0) {
        char done[64];
        snprintf(done, sizeof done, "%s-done", self);
        publish(me, self, done);
    }
}

static void idle(pmix_proc_t me, const char *self, const char *other) {
    if (me.rank == 0) {
        publish(me, self, self);
    }
    char done[64], *value = NULL;
    snprintf(done, sizeof done, "%s-done", other);
    printf("%s rank %u: lookup %s: %s\n", self, me.rank, done, PMIx_Error_string(lookup(done, 60, &value)));
}

static void across(pmix_proc_t me, const char *self, const char *other, bool connect) {
    bool yes = true;
    put("prsh.early", "%s early %u", self, me.rank);
    char *peer = NULL;
    pmix_proc_t both[2];
    if (!meet(me, self, other, &peer, both)) {
        return;
    }
    pmix_status_t rc;
    if (!connect) {
        if (fenceGetAll(self, me, peer, both, "prsh.across", "rank") == PMIX_SUCCESS &&
            fenceGetAll(self, me, peer, both, "prsh.again", "again") == PMIX_SUCCESS &&
            (rc = PMIx_Fence(both, 2, NULL, 0)) != PMIX_SUCCESS) { // no job ends while the other gets its data
            printf("%s rank %u: last fence: %s\n", self, me.rank, PMIx_Error_string(rc));
        }
        return;
    }
    if ((rc = PMIx_Connect(both, 2, NULL, 0)) != PMIX_SUCCESS) {
        printf("%s rank %u: connect: %s\n", self, me.rank, PMIx_Error_string(rc));
        return;
    }
    uint32_t size = sizeOf(self, me, peer);
    if (size == 0) {
        return;
    }
    get(self, me, peer, size - 1, "prsh.early");
    // Every rank has its early value before any puts more: the owner's
    // server then serves the early value alone.
    PMIx_Fence(both, 2, NULL, 0);
    put("prsh.across", "%s rank %u", self, me.rank);
    pmix_info_t collect;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(both, 2, &collect, 1);
    printf("%s rank %u: fence over both jobs: %s\n", self, me.rank, PMIx_Error_string(rc));
    for (uint32_t r = 0; rc == PMIX_SUCCESS && r < size; r++) {
        get(self, me, peer, r, "prsh.across");
    }
    if ((rc = PMIx_Disconnect(both, 2, NULL, 0)) != PMIX_SUCCESS) {
        printf("%s rank %u: disconnect: %s\n", self, me.rank, PMIx_Error_string(rc));
    }
}

int main(int argc, char **argv) {
    pmix_proc_t me;
    if (argc < 3 || PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "usage: across [mixed|fence|fence-mixed|timeout|idle] SELF OTHER | lookup KEY "
                        "(under a PMIx server)\n");
        return 2;
    }
    if (strcmp(argv[1], "lookup") == 0) {
        char *value = NULL;
        printf("lookup %s: %s\n", argv[2], PMIx_Error_string(lookup(argv[2], 1, &value)));
    } else if (strcmp(argv[1], "fence") == 0 && argc == 4) {
        across(me, argv[2], argv[3], false);
    } else if (strcmp(argv[1], "timeout") == 0 && argc == 4) {
        timeoutFence(me, argv[2], argv[3]);
    } else if (strcmp(argv[1], "idle") == 0 && argc == 4) {
        idle(me, argv[2], argv[3]);
    } else if (strcmp(argv[1], "fence-mixed") == 0 && argc == 4) {
        selfFirst = true;
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
