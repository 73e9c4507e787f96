//go:build pmix

#include <stdio.h>
#include <stdlib.h>
#include "shim.h"
#include "childjobs.h"
#include "library.h"
#include "_cgo_export.h"

// A client's PMIx_Spawn: Go copies the request at once (the library owns
// it only until the upcall returns) and answers through the callback
// once the child job's ranks have all started, or failed to.
pmix_status_t prsh_spawn(const pmix_proc_t *proc, const pmix_info_t job_info[], size_t ninfo,
                         const pmix_app_t apps[], size_t napps, pmix_spawn_cbfunc_t cb, void *cbdata) {
    prsh_spawn_call_t *call = malloc(sizeof(*call));
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    call->cb = cb;
    call->cbdata = cbdata;
    prshSpawn((char *)proc->nspace, proc->rank, (pmix_info_t *)job_info, ninfo, (pmix_app_t *)apps, napps, call);
    return PMIX_SUCCESS;
}

void prsh_spawn_reply(prsh_spawn_call_t *call, int status, const char *nspace) {
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, nspace);
    call->cb(status, ns, call->cbdata);
    free(call);
}

// prsh_info_value writes an info's value as text (at most n bytes).
void prsh_info_value(const pmix_info_t *info, char *buf, size_t n) {
    const pmix_value_t *v = &info->value;
    switch (v->type) {
    case PMIX_STRING:
        snprintf(buf, n, "%s", v->data.string ? v->data.string : "");
        break;
    case PMIX_BOOL:
        snprintf(buf, n, "%s", v->data.flag ? "true" : "false");
        break;
    case PMIX_INT:
        snprintf(buf, n, "%d", v->data.integer);
        break;
    case PMIX_INT32:
        snprintf(buf, n, "%d", (int)v->data.int32);
        break;
    case PMIX_UINT32:
        snprintf(buf, n, "%u", (unsigned)v->data.uint32);
        break;
    case PMIX_UINT16:
        snprintf(buf, n, "%u", (unsigned)v->data.uint16);
        break;
    case PMIX_UINT8:
        snprintf(buf, n, "%u", (unsigned)v->data.uint8);
        break;
    case PMIX_SIZE:
        snprintf(buf, n, "%zu", v->data.size);
        break;
    case PMIX_PROC_RANK:
        snprintf(buf, n, "%u", (unsigned)v->data.rank);
        break;
    case PMIX_PROC:
        if (v->data.proc != NULL) {
            snprintf(buf, n, "%s:%u", v->data.proc->nspace, (unsigned)v->data.proc->rank);
            break;
        }
        /* fall through */
    default:
        snprintf(buf, n, "(a value of PMIx type %d)", (int)v->type);
    }
}

int prsh_add_proc(void *list, const char *key, const char *nspace, uint32_t rank) {
    pmix_proc_t p;
    PMIX_LOAD_PROCID(&p, nspace, rank);
    return PMIx_Info_list_add(list, key, &p, PMIX_PROC);
}
