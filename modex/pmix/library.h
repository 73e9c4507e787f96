//go:build pmix

// The PMIx library (and hwloc, libevent, munge, udev behind it) is loaded
// with dlopen when a server boots, not linked into the binary: an orted
// whose job needs no server never maps it, which saves a fifth of its
// start-up CPU and most of its resident memory. Every library function
// the shim calls goes through a pointer that prsh_load_library fills; the
// macros below keep the calls reading as calls of the library.
#ifndef PRSH_PMIX_LIBRARY_H
#define PRSH_PMIX_LIBRARY_H

#include <pmix.h>
#include <pmix_server.h>
#include <hwloc.h>

#define PRSH_LIBRARY_FUNCTIONS(X)          \
    X(PMIx_Data_array_destruct)            \
    X(PMIx_Error_string)                   \
    X(PMIx_Info_list_add)                  \
    X(PMIx_Info_list_convert)              \
    X(PMIx_Info_list_release)              \
    X(PMIx_Info_list_start)                \
    X(PMIx_Load_topology)                  \
    X(PMIx_Register_event_handler)         \
    X(PMIx_generate_ppn)                   \
    X(PMIx_generate_regex)                 \
    X(PMIx_server_dmodex_request)          \
    X(PMIx_server_finalize)                \
    X(PMIx_server_deregister_nspace)       \
    X(PMIx_server_init)                    \
    X(PMIx_server_register_client)         \
    X(PMIx_server_register_nspace)         \
    X(PMIx_server_setup_fork)              \
    X(hwloc_free_xmlbuffer)                \
    X(hwloc_topology_export_xmlbuffer)

#define PRSH_DECLARE_POINTER(f) extern __typeof__(f) *prsh_##f;
PRSH_LIBRARY_FUNCTIONS(PRSH_DECLARE_POINTER)

#define PMIx_Data_array_destruct (*prsh_PMIx_Data_array_destruct)
#define PMIx_Error_string (*prsh_PMIx_Error_string)
#define PMIx_Info_list_add (*prsh_PMIx_Info_list_add)
#define PMIx_Info_list_convert (*prsh_PMIx_Info_list_convert)
#define PMIx_Info_list_release (*prsh_PMIx_Info_list_release)
#define PMIx_Info_list_start (*prsh_PMIx_Info_list_start)
#define PMIx_Load_topology (*prsh_PMIx_Load_topology)
#define PMIx_Register_event_handler (*prsh_PMIx_Register_event_handler)
#define PMIx_generate_ppn (*prsh_PMIx_generate_ppn)
#define PMIx_generate_regex (*prsh_PMIx_generate_regex)
#define PMIx_server_dmodex_request (*prsh_PMIx_server_dmodex_request)
#define PMIx_server_finalize (*prsh_PMIx_server_finalize)
#define PMIx_server_deregister_nspace (*prsh_PMIx_server_deregister_nspace)
#define PMIx_server_init (*prsh_PMIx_server_init)
#define PMIx_server_register_client (*prsh_PMIx_server_register_client)
#define PMIx_server_register_nspace (*prsh_PMIx_server_register_nspace)
#define PMIx_server_setup_fork (*prsh_PMIx_server_setup_fork)
#define hwloc_free_xmlbuffer (*prsh_hwloc_free_xmlbuffer)
#define hwloc_topology_export_xmlbuffer (*prsh_hwloc_topology_export_xmlbuffer)

// prsh_load_library loads the library once; NULL on success, else why not.
const char *prsh_load_library(void);

#endif
