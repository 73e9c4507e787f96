// Each rank puts a value of argv[1] bytes, fences collecting data, and
// reads its neighbour's back whole: a value as large as the server's
// shared-memory store segment allows.
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    pmix_proc_t me, all, peer;
    if (argc != 2 || PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
        fprintf(stderr, "usage: bigvalue BYTES, under a PMIx server\n");
        return 1;
    }
    size_t size = strtoul(argv[1], NULL, 10);
    char *bytes = malloc(size);
    memset(bytes, 'a' + me.rank % 26, size);
    pmix_value_t v;
    PMIX_VALUE_LOAD(&v, NULL, PMIX_BYTE_OBJECT);
    v.data.bo.bytes = bytes;
    v.data.bo.size = size;
    pmix_status_t rc = PMIx_Put(PMIX_GLOBAL, "prsh.big", &v);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Commit();
    }
    pmix_info_t collect;
    bool yes = true;
    PMIX_INFO_LOAD(&collect, PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    PMIX_LOAD_PROCID(&all, me.nspace, PMIX_RANK_WILDCARD);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Fence(&all, 1, &collect, 1);
    }
    uint32_t next = (me.rank + 1) % 2;
    PMIX_LOAD_PROCID(&peer, me.nspace, next);
    pmix_value_t *got = NULL;
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Get(&peer, "prsh.big", NULL, 0, &got);
    }
    if (rc != PMIX_SUCCESS) {
        printf("rank %u: %s\n", me.rank, PMIx_Error_string(rc));
        return 1;
    }
    int whole = got->type == PMIX_BYTE_OBJECT && got->data.bo.size == size;
    for (size_t i = 0; whole && i < size; i++) {
        whole = got->data.bo.bytes[i] == 'a' + (char)(next % 26);
    }
    printf("rank %u read %zu bytes of rank %u: %s\n", me.rank, got->data.bo.size, next, whole ? "whole" : "WRONG");
    PMIx_Finalize(NULL, 0);
    return whole ? 0 : 1;
}
