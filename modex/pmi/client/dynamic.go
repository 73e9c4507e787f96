package client

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"prsh/modex"
)

// MPI_Comm_spawn and the name service over PMI-2 (../WIRE.md §9, §6.4).

// ErrUnsupported: a request asks for something the PMI wire cannot carry.
// Nothing was sent; the connection is still usable.
var ErrUnsupported = errors.New("pmi: not expressible on the PMI wire")

// Spawner is the job id of the job whose Spawn started this one, "" when
// mpirun started it (the fullinit reply's spawner-jobid).
func (c *Client) Spawner() string { return c.spawner }

// Spawn starts a new job running req's programs, their ranks numbered
// across them in order (PMI2_Job_Spawn, MPI_Comm_spawn_multiple), and
// returns its job id once the launcher has started it. req.Preput is in
// the new job's key-value space when its ranks start. A refusal is a
// *ServerError. PMI carries each app's Argv, NP and Info, not Env nor
// the job-wide Info: those fail with ErrUnsupported.
func (c *Client) Spawn(req modex.SpawnRequest) (string, error) {
	kv, err := spawnItems(req)
	if err != nil {
		return "", err
	}
	rep, err := c.call("spawn", kv...)
	if err != nil {
		return "", err
	}
	id, ok := rep.get("jobid")
	if !ok {
		return "", c.fail(fmt.Errorf("%w: spawn-response without a jobid", ErrProtocol))
	}
	return id, nil
}

// spawnItems lays a request out as the spawn frame's items: ncmds and the
// preput, then each command's subcmd, maxprocs, arguments and info.
func spawnItems(req modex.SpawnRequest) ([]string, error) {
	if err := checkSpawn(req); err != nil {
		return nil, err
	}
	kv := []string{"ncmds", strconv.Itoa(len(req.Apps))}
	kv = appendPairs(kv, "preputcount", "ppkey", "ppval", req.Preput)
	for _, app := range req.Apps {
		kv = append(kv, "subcmd", app.Argv[0], "maxprocs", strconv.Itoa(app.NP),
			"argc", strconv.Itoa(len(app.Argv)-1))
		for i, arg := range app.Argv[1:] {
			kv = append(kv, "argv"+strconv.Itoa(i), arg)
		}
		kv = appendPairs(kv, "infokeycount", "infokey", "infoval", app.Info)
	}
	return kv, nil
}

// checkSpawn refuses what neither wire can carry.
func checkSpawn(req modex.SpawnRequest) error {
	if len(req.Apps) == 0 {
		return fmt.Errorf("%w: a spawn of no program", ErrUnsupported)
	}
	if len(req.Info) > 0 {
		return fmt.Errorf("%w: job-wide Info (give it to each app)", ErrUnsupported)
	}
	for i, app := range req.Apps {
		switch {
		case len(app.Argv) == 0 || app.Argv[0] == "":
			return fmt.Errorf("%w: app %d has no program", ErrUnsupported, i)
		case app.NP < 1:
			return fmt.Errorf("%w: app %d asks for %d ranks", ErrUnsupported, i, app.NP)
		case len(app.Env) > 0:
			return fmt.Errorf("%w: app %d has an environment", ErrUnsupported, i)
		}
	}
	return nil
}

// appendPairs appends a count and the numbered keys and values of m, in
// key order.
func appendPairs(kv []string, count, keyPrefix, valPrefix string, m map[string]string) []string {
	kv = append(kv, count, strconv.Itoa(len(m)))
	for i, k := range sortedKeys(m) {
		n := strconv.Itoa(i)
		kv = append(kv, keyPrefix+n, k, valPrefix+n, m[k])
	}
	return kv
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Publish makes port known under service to the jobs of this mpirun
// (PMI2_Nameserv_publish, MPI_Publish_name); a name already published is
// a *ServerError.
func (c *Client) Publish(service, port string) error {
	_, err := c.call("name-publish", "name", service, "port", port, "infokeycount", "0")
	return err
}

// Lookup returns the port published under service
// (PMI2_Nameserv_lookup, MPI_Lookup_name); an unknown service is a
// *ServerError at once, the server does not wait for it.
func (c *Client) Lookup(service string) (string, error) {
	rep, err := c.call("name-lookup", "name", service, "infokeycount", "0")
	if err != nil {
		return "", err
	}
	port, ok := rep.get("port")
	if !ok {
		port, ok = rep.get("value")
	}
	if found, _ := rep.get("found"); found != "TRUE" || !ok {
		return "", &ServerError{Cmd: "name-lookup", Msg: "service " + clip(service) + " not found"}
	}
	return port, nil
}

// Unpublish withdraws service (PMI2_Nameserv_unpublish,
// MPI_Unpublish_name).
func (c *Client) Unpublish(service string) error {
	_, err := c.call("name-unpublish", "name", service, "infokeycount", "0")
	return err
}
