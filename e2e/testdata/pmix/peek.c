// Prints this rank's namespace and, for each namespace named in argv
// ("." for its own), whether this rank's server holds that job (its size), asked with
// a one-second bound: a server waits for a namespace it does not know,
// in case its host has yet to register it.
#include <pmix.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    pmix_proc_t me, job;
    pmix_info_t timeout;
    int seconds = 1;
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    printf("namespace %s\n", me.nspace);
    PMIX_INFO_LOAD(&timeout, PMIX_TIMEOUT, &seconds, PMIX_INT);
    for (int i = 1; i < argc; i++) {
        pmix_value_t *v = NULL;
        const char *ns = strcmp(argv[i], ".") == 0 ? me.nspace : argv[i];
        PMIX_LOAD_PROCID(&job, ns, PMIX_RANK_WILDCARD);
        pmix_status_t rc = PMIx_Get(&job, PMIX_JOB_SIZE, &timeout, 1, &v);
        if (rc == PMIX_SUCCESS)
            printf("%s: held, size %u\n", argv[i], v->data.uint32);
        else
            printf("%s: gone\n", argv[i]);
    }
    PMIx_Finalize(NULL, 0);
    return 0;
}
