// Prints whether the job-level info of this rank's server has the node's
// hardware topology (hwloc XML under "pmix.ltopo"), which spares Open MPI
// ranks their own discovery of the node in MPI_Init.
#include <pmix.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    pmix_proc_t me, job;
    pmix_value_t *v = NULL;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Get(&job, "pmix.ltopo", NULL, 0, &v);
    int ok = rc == PMIX_SUCCESS && v->type == PMIX_STRING &&
             strstr(v->data.string, "<topology") != NULL;
    printf("rank %u: topology %s\n", me.rank, ok ? "given" : PMIx_Error_string(rc));
    PMIx_Finalize(NULL, 0);
    return 0;
}
