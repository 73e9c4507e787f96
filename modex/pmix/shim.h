//go:build pmix

// The C side of the PMIx server: the module of upcalls the library calls,
// blocking wrappers of its asynchronous registrations, and builders of the
// info arrays that Go cannot lay out itself.
#ifndef PRSH_PMIX_SHIM_H
#define PRSH_PMIX_SHIM_H

#include <stdint.h>
#include <stdlib.h>
#include <pmix_server.h>

// A pending reply to the library: a fence or a direct-modex request
// (cb), a name service or connect call (opcb), or a lookup (lookupcb).
typedef struct {
    pmix_modex_cbfunc_t cb;
    pmix_op_cbfunc_t opcb;
    pmix_lookup_cbfunc_t lookupcb;
    void *cbdata;
} prsh_call_t;

void *prsh_list(void);
int prsh_add_string(void *list, const char *key, const char *value);
int prsh_add_uint32(void *list, const char *key, uint32_t value);
int prsh_add_uint16(void *list, const char *key, uint16_t value);
int prsh_add_rank(void *list, const char *key, uint32_t value);
int prsh_add_bool(void *list, const char *key, int value);
int prsh_add_list(void *list, const char *key, void *sub);

int prsh_server_init(void *list);
int prsh_server_finalize(void);
int prsh_register_nspace(const char *nspace, int nlocal, void *list);
int prsh_deregister_nspace(const char *nspace);
int prsh_register_clients(const char *nspace, const uint32_t *ranks, size_t n, uint32_t uid, uint32_t gid);
int prsh_setup_fork(const char *nspace, uint32_t rank, char ***env);
int prsh_add_node_map(void *list, const char *nodes);
int prsh_add_proc_map(void *list, const char *ranks);
void prsh_reply(prsh_call_t *call, int status, char *data, size_t ndata);
int prsh_dmodex_request(const char *nspace, uint32_t rank, uintptr_t handle);
char *prsh_topology_xml(void);
const char *prsh_error_string(int status);
const char *prsh_load_library(void);

// connect.c: the upcalls of dynamic processes.
pmix_status_t prsh_publish(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
                           pmix_op_cbfunc_t cb, void *cbdata);
pmix_status_t prsh_lookup(const pmix_proc_t *proc, char **keys, const pmix_info_t info[], size_t ninfo,
                          pmix_lookup_cbfunc_t cb, void *cbdata);
pmix_status_t prsh_unpublish(const pmix_proc_t *proc, char **keys, const pmix_info_t info[], size_t ninfo,
                             pmix_op_cbfunc_t cb, void *cbdata);
pmix_status_t prsh_connect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[], size_t ninfo,
                           pmix_op_cbfunc_t cb, void *cbdata);
pmix_status_t prsh_disconnect(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
                              size_t ninfo, pmix_op_cbfunc_t cb, void *cbdata);
void prsh_lookup_reply(prsh_call_t *call, int status, size_t n, char **keys, char **values, size_t *sizes,
                       int *binary, char **nspaces, uint32_t *ranks);

#endif
