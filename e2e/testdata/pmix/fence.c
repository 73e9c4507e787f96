// Every rank but rank 1 enters a PMIx fence that collects data; rank 1
// leaves instead, as argv[1] says: "kill" (SIGKILL), "exit" (status 0,
// without PMIx_Finalize) or "finalize" (PMIx_Finalize, then status 0, at
// once).
#include <pmix.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    pmix_proc_t me, all;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    if (me.rank == 1 && strcmp(argv[1], "finalize") == 0) {
        PMIx_Finalize(NULL, 0);
        return 0;
    }
    if (me.rank == 1) {
        sleep(1);
        if (strcmp(argv[1], "kill") == 0) {
            raise(SIGKILL);
        }
        exit(0);
    }
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    pmix_status_t rc = PMIx_Fence(&all, 1, &collect, 1);
    printf("rank %u left the fence: %s\n", me.rank, PMIx_Error_string(rc));
    PMIx_Finalize(NULL, 0);
    return 0;
}
