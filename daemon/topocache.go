package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The PMIx library discovers the node's hardware topology (hwloc, PCI
// devices included) every time a server starts: about half of its start-up
// CPU, and most of its wall time on a VM, where each PCI config read traps
// to the hypervisor. The first orted of a boot saves the topology it found;
// the later ones hand the library that file (its MCA parameter
// pmix_hwloc_topo_file), which it loads instead of discovering.

// envTopologyFile is the library's parameter, read from the environment
// when the server initialises.
const envTopologyFile = "PMIX_MCA_pmix_hwloc_topo_file"

// topologyCache is where this node's topology is saved for this boot and
// this process's allowed CPUs and memory (a cgroup's cpuset changes what
// hwloc reports), or "" when there is no private directory for it.
func topologyCache() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	dir, ok := privateDir(filepath.Join(os.TempDir(), fmt.Sprintf("prsh-topology-%d", os.Getuid())))
	if !ok {
		return ""
	}
	key := sha256.Sum256([]byte(strings.TrimSpace(string(boot)) + "\n" + allowedCPUsAndMems()))
	return filepath.Join(dir, hex.EncodeToString(key[:12])+".xml")
}

// privateDir makes dir, or accepts it if it is a directory of ours that no
// one else may write: another user's file must never become our topology.
func privateDir(dir string) (string, bool) {
	os.Mkdir(dir, 0o700)
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return dir, ok && int(st.Uid) == os.Getuid()
}

// allowedCPUsAndMems are this process's Cpus_allowed_list and
// Mems_allowed_list lines.
func allowedCPUsAndMems() string {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	var out []string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Cpus_allowed_list:") || strings.HasPrefix(line, "Mems_allowed_list:") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// saveTopology writes xml to path atomically, so that an orted never
// reads half a file written by another.
func saveTopology(path, xml string) {
	if path == "" || xml == "" {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".topology-*")
	if err != nil {
		return
	}
	_, err = tmp.WriteString(xml)
	if cerr := tmp.Close(); err == nil && cerr == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
}

// dropInheritedTopology unsets a topology file that another orted set for
// its own library and that leaked to this one (a launcher that forwards
// the environment, srun): it names another node's hardware. A value the
// user set, outside our cache, is left alone, and then the cache is not
// used.
func dropInheritedTopology() (userSet bool) {
	v, ok := os.LookupEnv(envTopologyFile)
	if !ok {
		return false
	}
	if strings.Contains(filepath.Base(filepath.Dir(v)), "prsh-topology-") {
		os.Unsetenv(envTopologyFile)
		return false
	}
	return true
}
