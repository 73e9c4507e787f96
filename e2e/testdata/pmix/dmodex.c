// Each rank puts a value and commits it, then gets its right neighbour's
// without any fence that collects data: the PMIx server must fetch it
// from the neighbour's node (direct modex). argv[1] "fence" adds a fence
// that does not collect data before the gets.
#include <pmix.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    pmix_proc_t me, peer;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    pmix_value_t v, *got = NULL;
    char mine[64];
    snprintf(mine, sizeof mine, "value of rank %u", me.rank);
    PMIX_VALUE_LOAD(&v, mine, PMIX_STRING);
    PMIx_Put(PMIX_GLOBAL, "prsh.test", &v);
    PMIx_Commit();
    if (argc > 1 && strcmp(argv[1], "fence") == 0) {
        pmix_proc_t all;
        PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
        PMIx_Fence(&all, 1, NULL, 0);
    }
    pmix_value_t *size = NULL;
    PMIX_LOAD_PROCID(&peer, me.nspace, PMIX_RANK_WILDCARD);
    PMIx_Get(&peer, PMIX_JOB_SIZE, NULL, 0, &size);
    PMIX_LOAD_PROCID(&peer, me.nspace, (me.rank + 1) % size->data.uint32);
    pmix_status_t rc = PMIx_Get(&peer, "prsh.test", NULL, 0, &got);
    if (rc != PMIX_SUCCESS) {
        printf("rank %u: get from rank %u: %s\n", me.rank, peer.rank, PMIx_Error_string(rc));
    } else {
        printf("rank %u got \"%s\"\n", me.rank, got->data.string);
    }
    PMIx_Finalize(NULL, 0);
    return 0;
}
