package pmi

import (
	"fmt"
	"strconv"
	"strings"

	"prsh/modex"
)

// The spawn request of both dialects (WIRE.md §9) becomes one
// modex.SpawnRequest. A PMI-1 request is a series of mcmd=spawn blocks,
// one per command of MPI_Comm_spawn_multiple, each a list of unique keys;
// a PMI-2 request is one frame whose keys repeat once per command, read
// here as a head and one section per subcmd. Both are read strictly: a
// count that does not match the items given is an error reply, not a
// guess.

// Limits on one spawn request.
const (
	maxSpawnApps  = 256     // commands of one spawn_multiple
	maxSpawnItems = 1024    // arguments, preput or info pairs of one command
	maxSpawnProcs = 1 << 20 // ranks of one command
)

// fields are the items of one command (a PMI-1 block, a PMI-2 section) by
// key.
type fields map[string]string

func toFields(items []item) (fields, error) {
	f := make(fields, len(items))
	for _, it := range items {
		if _, dup := f[it.key]; dup {
			return nil, fmt.Errorf("%s given twice", clip(it.key))
		}
		f[it.key] = it.value
	}
	return f, nil
}

// count reads a count in [lo, hi]; an absent one is 0 unless required.
func (f fields) count(key string, lo, hi int, required bool) (int, error) {
	v, ok := f[key]
	if !ok && !required {
		return 0, nil
	}
	if !ok {
		return 0, fmt.Errorf("no %s", key)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s=%s is not a number from %d to %d", key, clip(v), lo, hi)
	}
	return n, nil
}

// list reads the n values prefix<first> … prefix<first+n-1>, and
// refuses any other key that is prefix and a number: a count and its
// items must agree.
func (f fields) list(prefix string, first, n int) ([]string, error) {
	out := make([]string, n)
	for i := range out {
		key := prefix + strconv.Itoa(first+i)
		v, ok := f[key]
		if !ok {
			return nil, fmt.Errorf("%d items %s* announced, but no %s", n, prefix, key)
		}
		out[i] = v
	}
	if got := f.numbered(prefix); got != n {
		return nil, fmt.Errorf("%d items %s* announced, %d given", n, prefix, got)
	}
	return out, nil
}

// numbered counts the keys that are prefix followed by digits.
func (f fields) numbered(prefix string) int {
	n := 0
	for k := range f {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
			n++
		}
	}
	return n
}

// pairs reads n key/value pairs keyPrefix<i>, valPrefix<i> from 0; nil
// when n is 0.
func (f fields) pairs(countKey, keyPrefix, valPrefix string) (map[string]string, error) {
	n, err := f.count(countKey, 0, maxSpawnItems, false)
	if err != nil {
		return nil, err
	}
	keys, err := f.list(keyPrefix, 0, n)
	if err != nil {
		return nil, err
	}
	vals, err := f.list(valPrefix, 0, n)
	if err != nil || n == 0 {
		return nil, err
	}
	m := make(map[string]string, n)
	for i, k := range keys {
		m[k] = vals[i]
	}
	return m, nil
}

// app reads one command: program, rank count, arguments and info, under
// the keys of the dialect.
func (f fields) app(k spawnKeys) (modex.SpawnApp, error) {
	exe := f[k.exe]
	if exe == "" {
		return modex.SpawnApp{}, fmt.Errorf("no %s", k.exe)
	}
	np, err := f.count(k.procs, 1, maxSpawnProcs, true)
	if err != nil {
		return modex.SpawnApp{}, err
	}
	argc, err := f.count(k.argc, 0, maxSpawnItems, false)
	if err != nil {
		return modex.SpawnApp{}, err
	}
	args, err := f.list(k.arg, k.firstArg, argc)
	if err != nil {
		return modex.SpawnApp{}, err
	}
	info, err := f.pairs(k.infoCount, k.infoKey, k.infoVal)
	if err != nil {
		return modex.SpawnApp{}, err
	}
	return modex.SpawnApp{Argv: append([]string{exe}, args...), NP: np, Info: info}, nil
}

// spawnKeys names the items of one command in a dialect.
type spawnKeys struct {
	exe, procs, argc, arg             string
	firstArg                          int
	infoCount, infoKey, infoVal       string
	preputCount, preputKey, preputVal string
}

var (
	spawnKeys1 = spawnKeys{exe: "execname", procs: "nprocs", argc: "argcnt", arg: "arg", firstArg: 1,
		infoCount: "info_num", infoKey: "info_key_", infoVal: "info_val_",
		preputCount: "preput_num", preputKey: "preput_key_", preputVal: "preput_val_"}
	spawnKeys2 = spawnKeys{exe: "subcmd", procs: "maxprocs", argc: "argc", arg: "argv",
		infoCount: "infokeycount", infoKey: "infokey", infoVal: "infoval",
		preputCount: "preputcount", preputKey: "ppkey", preputVal: "ppval"}
)

// spawnRequest2 reads a PMI-2 spawn frame: ncmds and the preput, then
// one section per command, each opened by its subcmd.
func spawnRequest2(items []item) (modex.SpawnRequest, error) {
	var sections [][]item
	head := []item{}
	for _, it := range items {
		switch {
		case it.key == "thrid": // where a threaded client routes the reply; reply2 echoes it
		case it.key == "subcmd":
			sections = append(sections, []item{it})
		case len(sections) > 0:
			last := len(sections) - 1
			sections[last] = append(sections[last], it)
		default:
			head = append(head, it)
		}
	}
	f, err := toFields(head)
	if err != nil {
		return modex.SpawnRequest{}, err
	}
	ncmds, err := f.count("ncmds", 1, maxSpawnApps, true)
	if err != nil {
		return modex.SpawnRequest{}, err
	}
	if ncmds != len(sections) {
		return modex.SpawnRequest{}, fmt.Errorf("ncmds=%d but %d subcmd given", ncmds, len(sections))
	}
	var req modex.SpawnRequest
	if req.Preput, err = f.pairs(spawnKeys2.preputCount, spawnKeys2.preputKey, spawnKeys2.preputVal); err != nil {
		return modex.SpawnRequest{}, err
	}
	for i, sec := range sections {
		app, err := sectionApp(sec)
		if err != nil {
			return modex.SpawnRequest{}, fmt.Errorf("command %d: %w", i+1, err)
		}
		req.Apps = append(req.Apps, app)
	}
	return req, nil
}

func sectionApp(sec []item) (modex.SpawnApp, error) {
	f, err := toFields(sec)
	if err != nil {
		return modex.SpawnApp{}, err
	}
	return f.app(spawnKeys2)
}

// spawnBlocks collects the PMI-1 blocks of one spawn request until the
// last, which alone gets a reply.
type spawnBlocks struct {
	req   modex.SpawnRequest
	total int   // totspawns
	seen  int   // blocks read
	bad   error // the first problem of a block, reported after the last
}

// blockPosition reads totspawns and spawnssofar (their first values, as
// the client's own parser would), without which the end of the request
// cannot be told.
func blockPosition(req request) (total, sofar int, err error) {
	f := fields{}
	for _, key := range []string{"totspawns", "spawnssofar"} {
		if v, ok := req.get(key); ok {
			f[key] = v
		}
	}
	if total, err = f.count("totspawns", 1, maxSpawnApps, true); err != nil {
		return 0, 0, err
	}
	sofar, err = f.count("spawnssofar", 1, total, true)
	return total, sofar, err
}

// add reads one block into the request; the preput, which every block
// repeats, is taken from the first.
func (sb *spawnBlocks) add(items []item) {
	sb.seen++
	if sb.bad != nil {
		return
	}
	f, err := toFields(items)
	if err != nil {
		sb.bad = fmt.Errorf("command %d: %w", sb.seen, err)
		return
	}
	app, err := f.app(spawnKeys1)
	if err == nil && sb.seen == 1 {
		sb.req.Preput, err = f.pairs(spawnKeys1.preputCount, spawnKeys1.preputKey, spawnKeys1.preputVal)
	}
	if err != nil {
		sb.bad = fmt.Errorf("command %d: %w", sb.seen, err)
		return
	}
	sb.req.Apps = append(sb.req.Apps, app)
}

// rankCount is the number of ranks the request starts.
func rankCount(req modex.SpawnRequest) int {
	n := 0
	for _, a := range req.Apps {
		n += a.NP
	}
	return n
}
