//go:build pmix

#include <pthread.h>
#include <string.h>
#include "shim.h"
#include "childjobs.h"
#include "library.h"
#include "_cgo_export.h"

// The library's threads run these upcalls: each copies what it needs and
// hands it to Go, which queues it for the daemon's event loop.

static pmix_status_t connected(const pmix_proc_t *proc, void *obj,
                               pmix_op_cbfunc_t cb, void *cbdata) {
    prshConnected((char *)proc->nspace, proc->rank);
    return PMIX_OPERATION_SUCCEEDED;
}

static pmix_status_t finalized(const pmix_proc_t *proc, void *obj,
                               pmix_op_cbfunc_t cb, void *cbdata) {
    prshFinalized((char *)proc->nspace, proc->rank);
    return PMIX_OPERATION_SUCCEEDED;
}

// The aborting client stays blocked until the job's end kills it: the
// abort is the job's failure, and the rank must not exit on its own
// before the daemon has reported it.
static pmix_status_t aborted(const pmix_proc_t *proc, void *obj, int status,
                             const char msg[], pmix_proc_t procs[], size_t nprocs,
                             pmix_op_cbfunc_t cb, void *cbdata) {
    prshAborted((char *)proc->nspace, proc->rank, status, (char *)(msg ? msg : ""));
    return PMIX_SUCCESS;
}

static int wants(const pmix_info_t info[], size_t ninfo, const char *key) {
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], key)) {
            return PMIX_INFO_TRUE(&info[i]);
        }
    }
    return 0;
}

static int timeout(const pmix_info_t info[], size_t ninfo) {
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) && info[i].value.type == PMIX_INT) {
            return info[i].value.data.integer;
        }
    }
    return 0;
}

static prsh_call_t *new_call(pmix_modex_cbfunc_t cb, void *cbdata) {
    prsh_call_t *call = calloc(1, sizeof(*call));
    if (call != NULL) {
        call->cb = cb;
        call->cbdata = cbdata;
    }
    return call;
}

// A fence over one namespace travels over the daemon tree: over all of
// it (a wildcard entry), or over the ranks listed, a group of its own. A
// fence over several namespaces is a group over several jobs.
static pmix_status_t fence(const pmix_proc_t procs[], size_t nprocs,
                           const pmix_info_t info[], size_t ninfo,
                           char *data, size_t ndata,
                           pmix_modex_cbfunc_t cb, void *cbdata) {
    if (nprocs == 0) {
        return PMIX_ERR_BAD_PARAM;
    }
    prsh_call_t *call = new_call(cb, cbdata);
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    prshFence((pmix_proc_t *)procs, nprocs, data, ndata, wants(info, ninfo, PMIX_COLLECT_DATA),
              timeout(info, ninfo), call);
    return PMIX_SUCCESS;
}

static pmix_status_t direct_modex(const pmix_proc_t *proc, const pmix_info_t info[],
                                  size_t ninfo, pmix_modex_cbfunc_t cb, void *cbdata) {
    prsh_call_t *call = new_call(cb, cbdata);
    if (call == NULL) {
        return PMIX_ERR_NOMEM;
    }
    prshDirectModex((char *)proc->nspace, proc->rank, call);
    return PMIX_SUCCESS;
}

// The library keeps a client's requests to remove files at the end (Open
// MPI's shared-memory segments, left in /dev/shm by a killed rank) itself,
// but only if the host offers job control; the rest of job control is
// not offered.
static pmix_status_t job_control(const pmix_proc_t *requestor, const pmix_proc_t targets[],
                                 size_t ntargets, const pmix_info_t directives[], size_t ndirs,
                                 pmix_info_cbfunc_t cb, void *cbdata) {
    return PMIX_ERR_NOT_SUPPORTED;
}

// The library reports a client whose connection closed before it
// finalized (none for one that finalized): with the finalized upcall,
// the last word of every client that connected.
static void lost(size_t id, pmix_status_t status, const pmix_proc_t *source,
                 pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                 pmix_event_notification_cbfunc_fn_t cb, void *cbdata) {
    if (source != NULL) {
        prshLost((char *)source->nspace, source->rank);
    }
    for (size_t i = 0; i < ninfo; i++) {  // others, where the library merged their reports
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROCS) && info[i].value.type == PMIX_DATA_ARRAY &&
            info[i].value.data.darray != NULL && info[i].value.data.darray->type == PMIX_PROC) {
            pmix_proc_t *procs = info[i].value.data.darray->array;
            for (size_t n = 0; n < info[i].value.data.darray->size; n++) {
                prshLost((char *)procs[n].nspace, procs[n].rank);
            }
        }
    }
    if (cb != NULL) {
        cb(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
    }
}

static pmix_server_module_t module = {
    .spawn = prsh_spawn,
    .client_connected = connected,
    .client_finalized = finalized,
    .abort = aborted,
    .fence_nb = fence,
    .direct_modex = direct_modex,
    .job_control = job_control,
    .publish = prsh_publish,
    .lookup = prsh_lookup,
    .unpublish = prsh_unpublish,
    .connect = prsh_connect,
    .disconnect = prsh_disconnect,
};

static void release(void *data) { free(data); }

// prsh_reply answers a fence or direct-modex request (the library owns
// data, malloc'd, until it calls release), or a call that wants a status
// only.
void prsh_reply(prsh_call_t *call, int status, char *data, size_t ndata) {
    if (call->opcb != NULL) {
        call->opcb(status, call->cbdata);
        free(data);
    } else {
        call->cb(status, data, ndata, call->cbdata, release, data);
    }
    free(call);
}

// The library answers a request for a local rank's data once the rank
// has committed it; data is the library's until the callback returns.
static void dmodex_done(pmix_status_t status, char *data, size_t sz, void *cbdata) {
    prshDmodexDone(status, data, sz, (uintptr_t)cbdata);
}

int prsh_dmodex_request(const char *nspace, uint32_t rank, uintptr_t handle) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace, rank);
    return PMIx_server_dmodex_request(&proc, dmodex_done, (void *)handle);
}

void *prsh_list(void) { return PMIx_Info_list_start(); }

int prsh_add_string(void *list, const char *key, const char *value) {
    return PMIx_Info_list_add(list, key, value, PMIX_STRING);
}

int prsh_add_uint32(void *list, const char *key, uint32_t value) {
    return PMIx_Info_list_add(list, key, &value, PMIX_UINT32);
}

int prsh_add_uint16(void *list, const char *key, uint16_t value) {
    return PMIx_Info_list_add(list, key, &value, PMIX_UINT16);
}

int prsh_add_rank(void *list, const char *key, uint32_t value) {
    pmix_rank_t r = value;
    return PMIx_Info_list_add(list, key, &r, PMIX_PROC_RANK);
}

int prsh_add_bool(void *list, const char *key, int value) {
    bool b = value != 0;
    return PMIx_Info_list_add(list, key, &b, PMIX_BOOL);
}

// prsh_add_list adds sub as an array of infos under key, and releases sub.
int prsh_add_list(void *list, const char *key, void *sub) {
    pmix_data_array_t arr;
    pmix_status_t rc = PMIx_Info_list_convert(sub, &arr);
    PMIx_Info_list_release(sub);
    if (rc != PMIX_SUCCESS) {
        return rc;
    }
    rc = PMIx_Info_list_add(list, key, &arr, PMIX_DATA_ARRAY);
    PMIx_Data_array_destruct(&arr);
    return rc;
}

// take turns a list into an array the caller frees with PMIx_Data_array_destruct.
static pmix_status_t take(void *list, pmix_data_array_t *arr) {
    pmix_status_t rc = PMIx_Info_list_convert(list, arr);
    PMIx_Info_list_release(list);
    return rc;
}

int prsh_server_init(void *list) {
    pmix_data_array_t arr;
    pmix_status_t rc = take(list, &arr);
    if (rc != PMIX_SUCCESS) {
        return rc;
    }
    rc = PMIx_server_init(&module, (pmix_info_t *)arr.array, arr.size);
    PMIx_Data_array_destruct(&arr);
    if (rc != PMIX_SUCCESS) {
        return rc;
    }
    pmix_status_t code = PMIX_ERR_LOST_CONNECTION;
    rc = PMIx_Register_event_handler(&code, 1, NULL, 0, lost, NULL, NULL);
    return rc < 0 ? rc : PMIX_SUCCESS;  // else the handler's reference
}

int prsh_server_finalize(void) { return PMIx_server_finalize(); }

// The registrations complete on the library's thread: wait for them,
// for left of them at once.
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    size_t left;
    pmix_status_t status; // the first error
} waiter_t;

static void op_done(pmix_status_t status, void *cbdata) {
    waiter_t *w = cbdata;
    pthread_mutex_lock(&w->mu);
    if (w->status == PMIX_SUCCESS) {
        w->status = status;
    }
    if (--w->left == 0) {
        pthread_cond_signal(&w->cond);
    }
    pthread_mutex_unlock(&w->mu);
}

// started accounts for an operation the library did at once, or refused.
static void started(waiter_t *w, pmix_status_t rc) {
    if (rc == PMIX_OPERATION_SUCCEEDED) {
        op_done(PMIX_SUCCESS, w);
    } else if (rc != PMIX_SUCCESS) {
        op_done(rc, w);
    }
}

static pmix_status_t wait_all(waiter_t *w) {
    pthread_mutex_lock(&w->mu);
    while (w->left > 0) {
        pthread_cond_wait(&w->cond, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cond);
    return w->status;
}

static pmix_status_t wait_op(waiter_t *w, pmix_status_t rc) {
    started(w, rc);
    return wait_all(w);
}

static void waiter_init(waiter_t *w, size_t n) {
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cond, NULL);
    w->left = n;
}

int prsh_register_nspace(const char *nspace, int nlocal, void *list) {
    pmix_data_array_t arr;
    pmix_status_t rc = take(list, &arr);
    if (rc != PMIX_SUCCESS) {
        return rc;
    }
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, nspace);
    waiter_t w;
    waiter_init(&w, 1);
    rc = wait_op(&w, PMIx_server_register_nspace(ns, nlocal, (pmix_info_t *)arr.array, arr.size, op_done, &w));
    PMIx_Data_array_destruct(&arr);
    return rc;
}

// prsh_deregister_nspace purges the namespace and every client of it
// from the library: its data, its shared-memory store, its collectives.
int prsh_deregister_nspace(const char *nspace) {
    pmix_nspace_t ns;
    PMIX_LOAD_NSPACE(ns, nspace);
    waiter_t w;
    waiter_init(&w, 1);
    PMIx_server_deregister_nspace(ns, op_done, &w);
    return wait_all(&w);
}

// prsh_register_clients registers n ranks of a namespace at once, and
// waits for them all: one at a time, each start waited for the library's
// thread, which ranks already in MPI_Init keep busy (256 on 2 CPUs: the
// last rank was registered 88 s after the first).
int prsh_register_clients(const char *nspace, const uint32_t *ranks, size_t n, uint32_t uid, uint32_t gid) {
    waiter_t w;
    waiter_init(&w, n);
    for (size_t i = 0; i < n; i++) {
        pmix_proc_t proc; // the library copies it
        PMIX_LOAD_PROCID(&proc, nspace, ranks[i]);
        started(&w, PMIx_server_register_client(&proc, uid, gid, NULL, op_done, &w));
    }
    return wait_all(&w);
}

int prsh_setup_fork(const char *nspace, uint32_t rank, char ***env) {
    pmix_proc_t proc;
    PMIX_LOAD_PROCID(&proc, nspace, rank);
    return PMIx_server_setup_fork(&proc, env);
}

// The node and proc maps go to the library in its own compressed form,
// which may hold NUL bytes: it never crosses into Go.
static int add_map(void *list, const char *key, const char *input,
                   pmix_status_t (*generate)(const char *, char **)) {
    char *regex = NULL;
    pmix_status_t rc = generate(input, &regex);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Info_list_add(list, key, regex, PMIX_REGEX);
    }
    free(regex);
    return rc;
}

int prsh_add_node_map(void *list, const char *nodes) {
    return add_map(list, PMIX_NODE_MAP, nodes, PMIx_generate_regex);
}

int prsh_add_proc_map(void *list, const char *ranks) {
    return add_map(list, PMIX_PROC_MAP, ranks, PMIx_generate_ppn);
}

// prsh_topology_xml is this node's hardware topology as hwloc XML, from
// the copy the library loaded, or NULL. Ranks that get it as the job's
// "pmix.ltopo" skip their own discovery of the node (Open MPI 4.1 reads
// it in MPI_Init, as under its own daemons).
char *prsh_topology_xml(void) {
    pmix_topology_t topo = {0};
    if (PMIx_Load_topology(&topo) != PMIX_SUCCESS || topo.topology == NULL ||
        topo.source == NULL || strncmp(topo.source, "hwloc", 5) != 0)
        return NULL;
    char *buf;
    int len;
    if (hwloc_topology_export_xmlbuffer((hwloc_topology_t)topo.topology, &buf, &len, 0) != 0)
        return NULL;
    char *xml = strdup(buf);
    hwloc_free_xmlbuffer((hwloc_topology_t)topo.topology, buf);
    return xml;
}

// prsh_error_string names a status; the library may not be loaded when
// its loading is what failed.
const char *prsh_error_string(int status) {
    return prsh_PMIx_Error_string != NULL ? PMIx_Error_string(status) : "PMIx library not loaded";
}
