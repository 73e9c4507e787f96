package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LookPath resolves name in path (a PATH value), as exec.LookPath does in
// the process's own: for the PATH a command run on the cluster will get,
// which has the testbed's directory first.
func LookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// EnvValue returns the last value of key in env, the one exec would use.
func EnvValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}
