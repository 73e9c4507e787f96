// Fences over part of the job (PMIx_Fence with a list of processes).
// argv[1] "halves": the lower and the upper half of the ranks each put a
// value, fence over their own half at once with PMIX_COLLECT_DATA, and
// get the value of the next rank of their half; then every rank fences
// over the whole job. "halves-collected" gets it as optional: it must
// have come with the fence's data (readable so only from the library's
// shared-memory store: with the hash store an optional get looks in the
// client's own cache alone). "leave": rank 2 finalises and exits at once, while
// ranks 0 and 1 fence over ranks 0-2, which must fail, not hang; "exit":
// rank 2 exits with status 0 without finalising instead. "timeout": ranks
// 0 and 1 fence over ranks 0-2 with a timeout of 1 second, which rank 2
// never enters; then every rank fences over the whole job.
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// fence_over fences over n ranks from first, collecting data, with a
// timeout of seconds unless 0.
static pmix_status_t fence_over(const char *nspace, int first, int n, int seconds) {
    pmix_proc_t *procs = calloc(n, sizeof(*procs));
    for (int i = 0; i < n; i++) {
        PMIX_LOAD_PROCID(&procs[i], nspace, first + i);
    }
    pmix_info_t info[2];
    bool yes = true;
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &seconds, PMIX_INT);
    pmix_status_t rc = PMIx_Fence(procs, n, info, seconds > 0 ? 2 : 1);
    free(procs);
    return rc;
}

static void halves(pmix_proc_t me, uint32_t size, bool collected) {
    bool yes = true;
    uint32_t half = size / 2;
    uint32_t lo = me.rank < half ? 0 : half, n = me.rank < half ? half : size - half;
    char mine[64];
    snprintf(mine, sizeof mine, "value of rank %u", me.rank);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, mine, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, "prsh.group", &v);
    PMIx_Commit();
    pmix_status_t rc = fence_over(me.nspace, lo, n, 0);
    if (rc != PMIX_SUCCESS) {
        printf("rank %u: fence over ranks %u-%u: %s\n", me.rank, lo, lo + n - 1, PMIx_Error_string(rc));
        return;
    }
    pmix_proc_t peer;
    PMIX_LOAD_PROCID(&peer, me.nspace, lo + (me.rank - lo + 1) % n);
    // Optional: the value must be here already, from the fence, not
    // fetched from the peer's node (direct modex), which a plain get does.
    pmix_info_t optional;
    PMIX_INFO_LOAD(&optional, PMIX_OPTIONAL, &yes, PMIX_BOOL);
    pmix_value_t *got = NULL;
    rc = PMIx_Get(&peer, "prsh.group", collected ? &optional : NULL, collected ? 1 : 0, &got);
    if (rc != PMIX_SUCCESS) {
        printf("rank %u: get from rank %u: %s\n", me.rank, peer.rank, PMIx_Error_string(rc));
        return;
    }
    printf("rank %u of ranks %u-%u got \"%s\"\n", me.rank, lo, lo + n - 1, got->data.string);
    PMIX_LOAD_PROCID(&peer, me.nspace, PMIX_RANK_WILDCARD);
    PMIx_Fence(&peer, 1, NULL, 0);
}

int main(int argc, char **argv) {
    pmix_proc_t me, wild;
    if (argc < 2 || PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "usage: groupfence halves|halves-collected|leave|exit|timeout (under a PMIx server)\n");
        return 1;
    }
    pmix_value_t *size = NULL;
    PMIX_LOAD_PROCID(&wild, me.nspace, PMIX_RANK_WILDCARD);
    PMIx_Get(&wild, PMIX_JOB_SIZE, NULL, 0, &size);
    if (strncmp(argv[1], "halves", 6) == 0) {
        halves(me, size->data.uint32, strcmp(argv[1], "halves-collected") == 0);
    } else if (me.rank == 2 && strcmp(argv[1], "exit") == 0) {
        exit(0);
    } else if (strcmp(argv[1], "timeout") == 0) {
        if (me.rank < 2) {
            pmix_status_t rc = fence_over(me.nspace, 0, 3, 1);
            printf("rank %u: fence over ranks 0-2 within 1 s: %s\n", me.rank, PMIx_Error_string(rc));
        }
        pmix_status_t rc = PMIx_Fence(&wild, 1, NULL, 0);
        printf("rank %u: fence over the job: %s\n", me.rank, PMIx_Error_string(rc));
    } else if (me.rank < 2) {
        pmix_status_t rc = fence_over(me.nspace, 0, 3, 0);
        printf("rank %u: fence over ranks 0-2: %s\n", me.rank, PMIx_Error_string(rc));
    }
    PMIx_Finalize(NULL, 0);
    return 0;
}
