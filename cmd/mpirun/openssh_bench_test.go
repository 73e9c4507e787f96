package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prsh/internal/sshdtest"
)

var (
	opensshNodes   = flag.Int("openssh.nodes", 256, "hosts of BenchmarkOpenSSHLaunch")
	opensshPerSSHD = flag.Int("openssh.per-sshd", 16, "hosts that share one sshd in BenchmarkOpenSSHLaunch")
)

// BenchmarkOpenSSHLaunch launches /bin/true on -openssh.nodes hosts
// served by real OpenSSH servers, -openssh.per-sshd aliases each (so each
// sshd sees a burst of logins, past its default MaxStartups of 10), with
// mpirun's defaults: native ssh, δ 32, every timeout at its default. On
// this machine the launch overloads the CPU, which must make it slow,
// never failed:
//
//	go test -tags pmix -run '^$' -bench OpenSSHLaunch -benchtime 3x ./cmd/mpirun
func BenchmarkOpenSSHLaunch(b *testing.B) {
	b.Setenv("HOME", b.TempDir()) // no user keys, config or known_hosts
	b.Setenv("SSH_AUTH_SOCK", "")
	config, hosts := opensshHosts(b, *opensshNodes, max(1, *opensshPerSSHD))
	orted := filepath.Join(bin, "orted")
	for b.Loop() {
		start := time.Now()
		cmd := exec.Command(filepath.Join(bin, "mpirun"), "--ssh-config", config, "-H", strings.Join(hosts, ","), "/bin/true")
		cmd.Env = sshdEnv()
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) > 0 {
			b.Fatalf("%d hosts over OpenSSH: %v after %v\n%s", len(hosts), err, time.Since(start).Round(time.Millisecond), out)
		}
		if left := procsOf(orted); len(left) > 0 {
			b.Fatalf("orteds left running: %v", left)
		}
	}
}

// opensshHosts starts an sshd per perSSHD of n hosts and writes one ssh
// config naming every host (h001, …) with its server.
func opensshHosts(b *testing.B, n, perSSHD int) (config string, hosts []string) {
	var all strings.Builder
	for first := 0; first < n; first += perSSHD {
		srv := sshdtest.Start(b)
		var aliases []string
		for i := first; i < min(n, first+perSSHD); i++ {
			aliases = append(aliases, fmt.Sprintf("h%03d", i+1))
		}
		text, err := os.ReadFile(srv.WriteConfig(b, aliases...))
		if err != nil {
			b.Fatal(err)
		}
		all.Write(text)
		hosts = append(hosts, aliases...)
	}
	config = filepath.Join(b.TempDir(), "ssh_config")
	if err := os.WriteFile(config, []byte(all.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return config, hosts
}
