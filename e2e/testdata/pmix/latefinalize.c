// Initialises PMIx, leaves its mark ($MARKS/<rank>), waits for the test's
// word ($MARKS/go) and finalises. The test stops the rank's server in
// between: PMIx_Finalize waits 2 s for the server's answer and then
// returns all the same, so the rank exits 0 before its server has read
// the finalize it sent.
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void) {
    pmix_proc_t me;
    char path[4096];
    if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init failed\n");
        return 1;
    }
    const char *marks = getenv("MARKS");
    snprintf(path, sizeof(path), "%s/%u", marks, me.rank);
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        perror(path);
        return 1;
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/go", marks);
    while (access(path, F_OK) != 0) {
        usleep(20000);
    }
    PMIx_Finalize(NULL, 0);
    printf("rank %u finalized\n", me.rank);
    return 0;
}
