package main

import (
	"os"
	"path/filepath"
	"testing"

	"prsh/testbed"
)

// TestBadInput: every mistake gets one clear line and a non-zero exit,
// never a panic, a hang or a half-launched job.
func TestBadInput(t *testing.T) {
	c := cluster(t, testbed.Config{Nodes: 2})
	dir := t.TempDir()
	badHostfile := filepath.Join(dir, "hosts")
	os.WriteFile(badHostfile, []byte("node001 slots=2\nnode002 slots=two\n"), 0o644)
	notExecutable := filepath.Join(dir, "script")
	os.WriteFile(notExecutable, []byte("#!/bin/sh\n"), 0o644)
	cases := []struct {
		name   string
		args   []string
		status int
		line   string
	}{
		{"hostfile syntax error", []string{"--hostfile", badHostfile, "/bin/true"}, 2, `^mpirun: .*hosts:2: .*two`},
		{"missing hostfile", []string{"--hostfile", filepath.Join(dir, "none"), "/bin/true"}, 2, `^mpirun: .*no such file`},
		{"empty host list", []string{"-H", "", "/bin/true"}, 2, `^mpirun: .*empty host list`},
		{"np zero", []string{"-np", "0", "/bin/true"}, 2, `^mpirun: -np must be at least 1, not 0`},
		{"np negative", []string{"-np", "-3", "/bin/true"}, 2, `^mpirun: -np must be at least 1, not -3`},
		{"negative spawn degree", []string{"--spawn-degree", "-1", "/bin/true"}, 2, `^mpirun: --spawn-degree must be 0 or more, or auto, not -1`},
		{"spawn degree not a number", []string{"--spawn-degree", "fast", "/bin/true"}, 2, `^mpirun: --spawn-degree must be 0 or more, or auto, not fast`},
		{"auto without a hop", []string{"--spawn-degree", "auto", "--spawn-hop-hint", "0s", "/bin/true"}, 2, `^mpirun: --spawn-hop-hint must be positive`},
		{"unknown routed", []string{"--routed", "mesh", "/bin/true"}, 2, `^mpirun: unknown routing topology "mesh" \(choose one of radix, binomial, direct\)`},
		{"unknown flag", []string{"--no-such-flag", "/bin/true"}, 2, `^mpirun: .*no-such-flag`},
		{"no command", []string{}, 2, `^mpirun: no command given`},
		{"bad --stdin", []string{"--stdin", "7", "/bin/true"}, 2, `^mpirun: --stdin "7": want a rank from 0 to 1, all or none`},
		{"bad --timeout", []string{"--timeout", "soon", "/bin/true"}, 2, `^mpirun: --timeout "soon"`},
		{"zero connect timeout", []string{"--ssh-connect-timeout", "0s", "/bin/true"}, 2, `^mpirun: --ssh-connect-timeout must be positive, not 0s`},
		{"negative callback timeout", []string{"--callback-timeout", "-1s", "/bin/true"}, 2, `^mpirun: --callback-timeout must be positive, not -1s`},
		{"negative kill grace", []string{"--kill-grace", "-2s", "/bin/true"}, 2, `^mpirun: --kill-grace must be 0 or more, not -2s`},
		{"no ssh sessions", []string{"--ssh-max-sessions", "0", "/bin/true"}, 2, `^mpirun: --ssh-max-sessions must be at least 1, not 0`},
		{"executable missing", []string{"/no/such/program"}, 127, `^mpirun: node00[12]: rank [01]: cannot run /no/such/program: no such file or directory$`},
		{"not executable", []string{notExecutable}, 126, `^mpirun: node00[12]: rank [01]: cannot run .*/script: permission denied$`},
		{"working directory missing", []string{"--wdir", "/no/such/dir", "/bin/true"}, 255, `^mpirun: node00[12]: rank [01]: working directory /no/such/dir does not exist$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := mpirun(t, c, tc.args...)
			if res.status != tc.status {
				t.Errorf("exit %d, want %d; stderr:\n%s", res.status, tc.status, res.stderr)
			}
			checkOneLine(t, res.stderr, tc.line)
		})
	}
}
