//go:build pmix

#include <string.h>
#include "shim.h"
#include "library.h"
#include "_cgo_export.h"

// The upcalls of dynamic processes: the name service (publish, lookup,
// unpublish) and connect/disconnect between namespaces. Each hands Go a
// copy of what it needs and a call to answer once.

static prsh_call_t *new_op(pmix_op_cbfunc_t cb, void *cbdata) {
    prsh_call_t *call = calloc(1, sizeof(*call));
    if (call != NULL) {
        call->opcb = cb;
        call->cbdata = cbdata;
    }
    return call;
}

// is_directive says whether a publish's info entry steers the call (its
// range, persistence, wait, timeout, the library's user and group ids)
// rather than being a name to publish: those all live under "pmix.".
static int is_directive(const pmix_info_t *info) { return PMIX_CHECK_RESERVED_KEY(info->key); }

// range_of is the call's PMIX_RANGE, or PMIX_RANGE_UNDEF.
static int range_of(const pmix_info_t info[], size_t ninfo) {
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_RANGE) && info[i].value.type == PMIX_DATA_RANGE) {
            return info[i].value.data.range;
        }
    }
    return PMIX_RANGE_UNDEF;
}

// job_range says whether range keeps a name within the publisher's own
// namespace; every other range (session, global, the default) reaches
// every job of the mpirun.
static int job_range(int range) {
    return range == PMIX_RANGE_NAMESPACE || range == PMIX_RANGE_LOCAL || range == PMIX_RANGE_PROC_LOCAL ||
           range == PMIX_RANGE_RM;
}

pmix_status_t prsh_publish(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                           pmix_op_cbfunc_t cb, void *cbdata) {
    size_t n = 0;
    for (size_t i = 0; i < ninfo; i++) {
        if (is_directive(&info[i])) {
            continue;
        }
        // Names are strings (MPI port names, Open MPI's lists of processes).
        if (info[i].value.type != PMIX_STRING && info[i].value.type != PMIX_BYTE_OBJECT) {
            return PMIX_ERR_NOT_SUPPORTED;
        }
        n++;
    }
    if (n == 0) {
        return PMIX_ERR_BAD_PARAM;
    }
    prsh_call_t *call = new_op(cb, cbdata);
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    char **keys = calloc(n, sizeof(*keys));
    char **values = calloc(n, sizeof(*values));
    size_t *sizes = calloc(n, sizeof(*sizes));
    int *binary = calloc(n, sizeof(*binary));
    if (keys == NULL || values == NULL || sizes == NULL || binary == NULL) {
        free(keys), free(values), free(sizes), free(binary), free(call);
        return PMIX_ERR_NOMEM;
    }
    size_t k = 0;
    for (size_t i = 0; i < ninfo; i++) {
        if (is_directive(&info[i])) {
            continue;
        }
        const pmix_value_t *v = &info[i].value;
        keys[k] = (char *)info[i].key;
        if (v->type == PMIX_STRING) {
            values[k] = v->data.string;
            sizes[k] = v->data.string != NULL ? strlen(v->data.string) : 0;
        } else {
            values[k] = v->data.bo.bytes;
            sizes[k] = v->data.bo.size;
            binary[k] = 1;
        }
        k++;
    }
    prshPublish((char *)proc->nspace, proc->rank, keys, values, sizes, binary, n, job_range(range_of(info, ninfo)),
                call);
    free(keys), free(values), free(sizes), free(binary);
    return PMIX_SUCCESS;
}

static int flag(const pmix_info_t info[], size_t ninfo, const char *key) {
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], key)) {
            return PMIX_INFO_TRUE(&info[i]);
        }
    }
    return 0;
}

static int seconds(const pmix_info_t info[], size_t ninfo) {
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_INT) {
            return info[i].value.data.integer;
        }
    }
    return 0;
}

static size_t count_keys(char **keys) {
    size_t n = 0;
    while (keys != NULL && keys[n] != NULL) {
        n++;
    }
    return n;
}

pmix_status_t prsh_lookup(const pmix_proc_t *proc, char **keys, const pmix_info_t info[], size_t ninfo,
                          pmix_lookup_cbfunc_t cb, void *cbdata) {
    size_t n = count_keys(keys);
    if (n == 0) {
        return PMIX_ERR_BAD_PARAM;
    }
    prsh_call_t *call = calloc(1, sizeof(*call));
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    call->lookupcb = cb;
    call->cbdata = cbdata;
    prshLookup((char *)proc->nspace, proc->rank, keys, n, flag(info, ninfo, PMIX_WAIT),
               seconds(info, ninfo), call);
    return PMIX_SUCCESS;
}

pmix_status_t prsh_unpublish(const pmix_proc_t *proc, char **keys, const pmix_info_t info[], size_t ninfo,
                             pmix_op_cbfunc_t cb, void *cbdata) {
    prsh_call_t *call = new_op(cb, cbdata);
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    prshUnpublish((char *)proc->nspace, proc->rank, keys, count_keys(keys), call);
    return PMIX_SUCCESS;
}

pmix_status_t prsh_connect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
                           pmix_op_cbfunc_t cb, void *cbdata) {
    if (nprocs == 0) {
        return PMIX_ERR_BAD_PARAM;
    }
    prsh_call_t *call = new_op(cb, cbdata);
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    prshConnect((pmix_proc_t *)procs, nprocs, 1, seconds(info, ninfo), call);
    return PMIX_SUCCESS;
}

pmix_status_t prsh_disconnect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, pmix_op_cbfunc_t cb, void *cbdata) {
    if (nprocs == 0) {
        return PMIX_ERR_BAD_PARAM;
    }
    prsh_call_t *call = new_op(cb, cbdata);
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    prshConnect((pmix_proc_t *)procs, nprocs, 0, seconds(info, ninfo), call);
    return PMIX_SUCCESS;
}

// prsh_lookup_reply answers a lookup with n names, each a key, its
// value (a string, or bytes of its size where binary) and who published
// it; the library copies them before returning.
void prsh_lookup_reply(prsh_call_t *call, int status, size_t n, char **keys, char **values, size_t *sizes,
                       int *binary, char **nspaces, uint32_t *ranks) {
    pmix_pdata_t *data = n > 0 ? calloc(n, sizeof(*data)) : NULL;
    if (n > 0 && data == NULL) {
        status = PMIX_ERR_NOMEM;
        n = 0;
    }
    for (size_t i = 0; i < n; i++) {
        PMIX_LOAD_PROCID(&data[i].proc, nspaces[i], ranks[i]);
        PMIX_LOAD_KEY(data[i].key, keys[i]);
        if (binary[i]) {
            data[i].value.type = PMIX_BYTE_OBJECT;
            data[i].value.data.bo.bytes = values[i];
            data[i].value.data.bo.size = sizes[i];
        } else {
            data[i].value.type = PMIX_STRING;
            data[i].value.data.string = values[i];
        }
    }
    call->lookupcb(status, data, n, call->cbdata);
    free(data);
    free(call);
}
