package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"prsh/internal/sshdtest"
)

func TestZZProbeOpenSSH(t *testing.T) {
	srv := sshdtest.Start(t)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("SSH_AUTH_SOCK", "")
	cfg := srv.WriteConfig(t, "a1", "a2", "a3")
	cmd := exec.Command(filepath.Join(bin, "mpirun"), "--ssh-config", cfg, "-H", "a1,a2,a3", "--spawn-degree", "1", "--report-launch-times", "sh", "-c", "echo $PRSH_RANK $PRSH_NODE")
	cmd.Env = append(sshdEnv(), os.Getenv("ZZENV"))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	t0 := time.Now()
	cmd.Start()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	seen := map[string]bool{}
	for {
		select {
		case <-done:
			t.Logf("%6dms mpirun exited", time.Since(t0).Milliseconds())
			return
		default:
		}
		now := map[string]bool{}
		files, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, f := range files {
			b, _ := os.ReadFile(f)
			s := strings.ReplaceAll(string(b), "\x00", " ")
			if strings.Contains(s, bin) || strings.HasPrefix(s, "sshd: root") || strings.HasPrefix(s, "sh -c echo") {
				k := filepath.Base(filepath.Dir(f)) + " " + s
				if len(k) > 90 {
					k = k[:90]
				}
				now[k] = true
			}
		}
		for k := range now {
			if !seen[k] {
				t.Logf("%6dms + %s", time.Since(t0).Milliseconds(), k)
			}
		}
		for k := range seen {
			if !now[k] {
				t.Logf("%6dms - %s", time.Since(t0).Milliseconds(), k)
			}
		}
		seen = now
		time.Sleep(5 * time.Millisecond)
	}
}
