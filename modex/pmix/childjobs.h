//go:build pmix

// childjobs.c: a client's PMIx_Spawn, which starts a child job.
#ifndef PRSH_PMIX_CHILDJOBS_H
#define PRSH_PMIX_CHILDJOBS_H

#include <stdint.h>
#include <pmix_server.h>

// A pending answer to a client's PMIx_Spawn.
typedef struct {
    pmix_spawn_cbfunc_t cb;
    void *cbdata;
} prsh_spawn_call_t;

pmix_status_t prsh_spawn(const pmix_proc_t *proc, const pmix_info_t job_info[], size_t ninfo,
                         const pmix_app_t apps[], size_t napps, pmix_spawn_cbfunc_t cb, void *cbdata);
void prsh_spawn_reply(prsh_spawn_call_t *call, int status, const char *nspace);
void prsh_info_value(const pmix_info_t *info, char *buf, size_t n);
int prsh_add_proc(void *list, const char *key, const char *nspace, uint32_t rank);

#endif
