//go:build pmix

package pmix

/*
#include <pmix.h>
#include "shim.h"
*/
import "C"

import (
	"sync"
	"time"
	"unsafe"
)

// The upcalls of dynamic processes (connect.c): the name service and
// connect/disconnect, handed to the Handler as values.

//export prshPublish
func prshPublish(ns *C.char, rank C.uint32_t, keys, values **C.char, sizes *C.size_t, binary *C.int, n C.size_t, jobOnly C.int, call *C.prsh_call_t) {
	p := Publish{Proc: proc(ns, rank), JobOnly: jobOnly != 0, Reply: &Reply{call: call}}
	ks, vs, ls, bs := cStrings(keys, n), unsafe.Slice(values, int(n)), unsafe.Slice(sizes, int(n)), unsafe.Slice(binary, int(n))
	for i := range ks {
		v := string(C.GoBytes(unsafe.Pointer(vs[i]), C.int(ls[i])))
		p.Names = append(p.Names, Name{Key: ks[i], Value: v, Binary: bs[i] != 0})
	}
	upcall(func(h Handler) { h.Publish(p) })
}

//export prshLookup
func prshLookup(ns *C.char, rank C.uint32_t, keys **C.char, n C.size_t, wait, timeout C.int, call *C.prsh_call_t) {
	l := Lookup{Proc: proc(ns, rank), Keys: cStrings(keys, n), Wait: wait != 0,
		Timeout: time.Duration(timeout) * time.Second, Reply: &LookupReply{call: call}}
	upcall(func(h Handler) { h.Lookup(l) })
}

//export prshUnpublish
func prshUnpublish(ns *C.char, rank C.uint32_t, keys **C.char, n C.size_t, call *C.prsh_call_t) {
	u := Unpublish{Proc: proc(ns, rank), Keys: cStrings(keys, n), Reply: &Reply{call: call}}
	upcall(func(h Handler) { h.Unpublish(u) })
}

//export prshConnect
func prshConnect(procs *C.pmix_proc_t, n C.size_t, connect, timeout C.int, call *C.prsh_call_t) {
	c := Connect{Procs: procsOf(procs, n), Disconnect: connect == 0, Timeout: time.Duration(timeout) * time.Second,
		Reply: &Reply{call: call}}
	upcall(func(h Handler) { h.Connect(c) })
}

// procsOf copies the library's list of processes; the wildcard rank
// becomes Wildcard.
func procsOf(procs *C.pmix_proc_t, n C.size_t) []Proc {
	out := make([]Proc, n)
	for i, p := range unsafe.Slice(procs, int(n)) {
		out[i] = proc(&p.nspace[0], C.uint32_t(p.rank))
	}
	return out
}

func cStrings(p **C.char, n C.size_t) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i, s := range unsafe.Slice(p, int(n)) {
		out[i] = C.GoString(s)
	}
	return out
}

// LookupReply answers one lookup, once.
type LookupReply struct {
	call *C.prsh_call_t
	once sync.Once
}

// Send gives the library the names found, or the error.
func (r *LookupReply) Send(names []Name, err error) {
	r.once.Do(func() {
		if err != nil {
			names = nil
		}
		n := max(len(names), 1) // C arrays of at least one, so that each has an address
		keys, values, nss := cArray(n), cArray(n), cArray(n)
		sizes := unsafe.Slice((*C.size_t)(C.calloc(C.size_t(n), C.sizeof_size_t)), n)
		binary := unsafe.Slice((*C.int)(C.calloc(C.size_t(n), C.sizeof_int)), n)
		ranks := unsafe.Slice((*C.uint32_t)(C.calloc(C.size_t(n), 4)), n)
		for i, nm := range names {
			keys[i], nss[i] = C.CString(nm.Key), C.CString(nm.Owner.Namespace)
			values[i], sizes[i] = (*C.char)(C.CBytes(append([]byte(nm.Value), 0))), C.size_t(len(nm.Value))
			if nm.Binary {
				binary[i] = 1
			}
			ranks[i] = C.uint32_t(nm.Owner.Rank)
		}
		C.prsh_lookup_reply(r.call, C.int(code(err)), C.size_t(len(names)), &keys[0], &values[0], &sizes[0], &binary[0],
			&nss[0], &ranks[0])
		for i := range names {
			C.free(unsafe.Pointer(keys[i]))
			C.free(unsafe.Pointer(values[i]))
			C.free(unsafe.Pointer(nss[i]))
		}
		for _, p := range []unsafe.Pointer{unsafe.Pointer(&keys[0]), unsafe.Pointer(&values[0]), unsafe.Pointer(&nss[0]),
			unsafe.Pointer(&sizes[0]), unsafe.Pointer(&binary[0]), unsafe.Pointer(&ranks[0])} {
			C.free(p)
		}
	})
}

// cArray is an array of n C strings in C memory.
func cArray(n int) []*C.char {
	p := (**C.char)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	return unsafe.Slice(p, n)
}
