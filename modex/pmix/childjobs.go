//go:build pmix

package pmix

/*
#include <stdlib.h>
#include <pmix.h>
#include "childjobs.h"
*/
import "C"

import (
	"sync"
	"unsafe"

	"prsh/modex"
)

// A client's PMIx_Spawn becomes a modex.SpawnRequest for the daemon's
// ChildJobs, answered with the child's namespace.

// ChildJobReply answers one PMIx_Spawn, once.
type ChildJobReply struct {
	call *C.prsh_spawn_call_t
	once sync.Once
}

// Send gives the client the child job's namespace, or the error.
func (r *ChildJobReply) Send(namespace string, err error) {
	r.once.Do(func() {
		ns := C.CString(namespace)
		defer C.free(unsafe.Pointer(ns))
		C.prsh_spawn_reply(r.call, C.int(code(err)), ns)
	})
}

//export prshSpawn
func prshSpawn(ns *C.char, rank C.uint32_t, info *C.pmix_info_t, ninfo C.size_t, apps *C.pmix_app_t, napps C.size_t,
	call *C.prsh_spawn_call_t) {
	p, req, reply := proc(ns, rank), spawnRequest(info, ninfo, apps, napps), &ChildJobReply{call: call}
	upcall(func(h Handler) {
		if c, ok := h.(ChildJobs); ok {
			c.ChildJob(p, req, reply)
			return
		}
		reply.Send("", ErrFailed)
	})
}

// spawnRequest copies the library's request: each app's program, its
// environment, its count and its hints, and the job's hints.
func spawnRequest(info *C.pmix_info_t, ninfo C.size_t, apps *C.pmix_app_t, napps C.size_t) modex.SpawnRequest {
	req := modex.SpawnRequest{Info: hints(info, ninfo)}
	for _, a := range unsafe.Slice(apps, int(napps)) {
		app := modex.SpawnApp{Argv: nullTerminated(a.argv), Env: nullTerminated(a.env), NP: int(a.maxprocs), Info: hints(a.info, a.ninfo)}
		if cmd := C.GoString(a.cmd); len(app.Argv) == 0 {
			app.Argv = []string{cmd}
		} else if cmd != "" {
			app.Argv[0] = cmd
		}
		if cwd := C.GoString(a.cwd); cwd != "" && app.Info["wdir"] == "" {
			if app.Info == nil {
				app.Info = map[string]string{}
			}
			app.Info["wdir"] = cwd
		}
		req.Apps = append(req.Apps, app)
	}
	return req
}

// hintNames are the PMIx keys of the hints every PMI dialect names
// alike (MPI_Info's keys); others keep the library's key.
var hintNames = map[string]string{
	C.PMIX_HOST: "host", C.PMIX_HOSTFILE: "hostfile", C.PMIX_ADD_HOST: "add-host", C.PMIX_ADD_HOSTFILE: "add-hostfile",
	C.PMIX_WDIR:   "wdir",
	C.PMIX_PREFIX: "prefix", C.PMIX_MAPBY: "map-by",
}

// hints copies infos as text, by hint name.
func hints(info *C.pmix_info_t, n C.size_t) map[string]string {
	if n == 0 {
		return nil
	}
	out := map[string]string{}
	var buf [1024]C.char
	infos := unsafe.Slice(info, int(n))
	for i := range infos {
		in := &infos[i]
		C.prsh_info_value(in, &buf[0], C.size_t(len(buf)))
		key := C.GoString(&in.key[0])
		if name, ok := hintNames[key]; ok {
			key = name
		}
		out[key] = C.GoString(&buf[0])
	}
	return out
}

// nullTerminated copies a NULL-terminated array of C strings.
func nullTerminated(arr **C.char) []string {
	var out []string
	for p := arr; p != nil && *p != nil; p = (**C.char)(unsafe.Add(unsafe.Pointer(p), unsafe.Sizeof(*p))) {
		out = append(out, C.GoString(*p))
	}
	return out
}

// parent adds a child job's parent (PMIX_PARENT_ID) to its job info.
func (l *list) parent(p Proc) {
	ns := C.CString(p.Namespace)
	defer C.free(unsafe.Pointer(ns))
	l.add(C.PMIX_PARENT_ID, func(k *C.char) C.int { return C.prsh_add_proc(l.ptr, k, ns, C.uint32_t(p.Rank)) })
}
