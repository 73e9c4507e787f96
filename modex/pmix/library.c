//go:build pmix

#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include "library.h"

#define PRSH_DEFINE_POINTER(f) __typeof__(f) *prsh_##f;
PRSH_LIBRARY_FUNCTIONS(PRSH_DEFINE_POINTER)

// The soname of PMIx 3 to 5; the binary's run path (from pkg-config's
// -rpath) finds it where pkg-config found it at build time.
#define PRSH_LIBPMIX "libpmix.so.2"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *load_error = "PMIx library not loaded";
static char dl_error[512];

// resolve looks a function up in the library or in one it depends on
// (hwloc's come with libpmix).
static int resolve(void *lib, const char *name, void **fn) {
    *fn = dlsym(lib, name);
    if (*fn == NULL) {
        snprintf(dl_error, sizeof(dl_error), "%s: no %s", PRSH_LIBPMIX, name);
        load_error = dl_error;
        return -1;
    }
    return 0;
}

#define PRSH_RESOLVE(f) \
    if (resolve(lib, #f, (void **)&prsh_##f) != 0) return;

static void load(void) {
    // RTLD_GLOBAL: the library dlopens its own plugins, which expect its
    // symbols to be visible.
    void *lib = dlopen(PRSH_LIBPMIX, RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        snprintf(dl_error, sizeof(dl_error), "%s", dlerror());
        load_error = dl_error;
        return;
    }
    PRSH_LIBRARY_FUNCTIONS(PRSH_RESOLVE)
    load_error = NULL;
}

const char *prsh_load_library(void) {
    pthread_once(&once, load);
    return load_error;
}
