package e2e

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"prsh/internal/sshdtest"
	"prsh/modex/pmix"
	"prsh/testbed"
)

// BenchmarkLaunch measures the paper's /bin/true benchmark on the testbed:
// 256 nodes, 20 ms of emulated ssh latency per session, for several spawn
// degrees. It reports wall time per launch and the CPU seconds used by
// mpirun, the orteds and the ranks (the testbed's own ssh servers run in
// the benchmark process and are not counted).
//
//	go test -run '^$' -bench Launch -benchtime 5x ./e2e
func BenchmarkLaunch(b *testing.B) {
	nodes := 256
	c, err := testbed.Start(testbed.Config{Nodes: nodes, SSHLatency: 20 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, degree := range []int{2, 8, 32, 256} {
		b.Run(fmt.Sprintf("nodes=%d/degree=%d", nodes, degree), func(b *testing.B) {
			cpu := childCPU()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(filepath.Join(bin, "mpirun"), "--spawn-degree", fmt.Sprint(degree), "/bin/true")
				cmd.Env = append(os.Environ(), c.Env()...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.ReportMetric((childCPU()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// childCPU is the user+system time of reaped children and their reaped
// descendants.
func childCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkOutput measures output throughput through a 3-level spawn tree
// (14 nodes, δ = 2) to mpirun's stdout, which goes to /dev/null: MB/s at
// mpirun's stdout and mpirun's CPU seconds per GB, for 1, 16 and 64 ranks
// writing 1 GB between them. PRSH_BENCH_BINS=name=dir,… runs the mpirun
// and orted of each dir instead of this build's, in turn for every rank
// count, so that a shared machine's load falls on all alike.
//
//	go test -run '^$' -bench Output -benchtime 3x ./e2e
//	make bin && PRSH_BENCH_BINS=this=$PWD/bin,main=/tmp/main go test -run '^$' -bench Output -benchtime 1x ./e2e
func BenchmarkOutput(b *testing.B) {
	c, err := testbed.Start(testbed.Config{Nodes: 14, Slots: 5})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	devnull, _ := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	defer devnull.Close()
	const total = 1 << 30
	builds := benchBuilds(b)
	for _, ranks := range []int{1, 16, 64} {
		for _, build := range builds {
			b.Run(fmt.Sprintf("ranks=%d%s", ranks, build.suffix), func(b *testing.B) {
				per := fmt.Sprint(total / ranks)
				var cpu time.Duration
				b.SetBytes(total)
				for i := 0; i < b.N; i++ {
					cmd := exec.Command(filepath.Join(build.dir, "mpirun"), "--spawn-degree", "2", "--map-by", "node", "-np", fmt.Sprint(ranks),
						"sh", "-c", "head -c "+per+" /dev/zero")
					cmd.Env = append(os.Environ(), c.Env()...)
					var stderr bytes.Buffer
					cmd.Stdout, cmd.Stderr = devnull, &stderr
					if err := cmd.Run(); err != nil {
						b.Fatalf("%v: %s", err, stderr.Bytes())
					}
					cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
				b.ReportMetric(cpu.Seconds()/float64(b.N)/(total/1e9), "mpirun-cpu-s/GB")
			})
		}
	}
}

// benchBuild is a directory holding mpirun and orted, and what its
// benchmarks' names end with.
type benchBuild struct{ suffix, dir string }

// benchBuilds are those PRSH_BENCH_BINS names, or else this build.
func benchBuilds(b *testing.B) []benchBuild {
	spec := os.Getenv("PRSH_BENCH_BINS")
	if spec == "" {
		return []benchBuild{{"", bin}}
	}
	var builds []benchBuild
	for _, nameDir := range strings.Split(spec, ",") {
		name, dir, ok := strings.Cut(nameDir, "=")
		if !ok || name == "" || dir == "" {
			b.Fatalf("PRSH_BENCH_BINS: %q is not name=dir", nameDir)
		}
		builds = append(builds, benchBuild{"/bin=" + name, dir})
	}
	return builds
}

// BenchmarkStaging runs a 64 MB program on 64 nodes (one rank each, spawn
// degree 8), each rank reading the whole of its program as a loader
// would: from the one file every node shares ("shared"), or from the
// node's own copy that --preload-binary sent down the spawn tree into its
// TMPDIR, on /dev/shm here ("preload"). It reports wall time per job and
// the CPU seconds of mpirun, the orteds and the ranks. On one machine the
// shared file is in the page cache, so this measures what staging costs,
// not the shared file system's contention that it removes.
//
//	go test -tags pmix -run '^$' -bench Staging -benchtime 3x ./e2e
func BenchmarkStaging(b *testing.B) {
	const nodes, size = 64, 64 << 20
	prog := filepath.Join(b.TempDir(), "big")
	head := "#!/bin/sh\ncat \"$0\" > /dev/null\nexit\n"
	f, err := os.OpenFile(prog, os.O_CREATE|os.O_WRONLY, 0o755)
	if err == nil {
		f.WriteString(head)
		_, err = f.Write(bytes.Repeat([]byte("#"), size-len(head)))
		f.Close()
	}
	if err != nil {
		b.Fatal(err)
	}
	path, err := plainBin()
	if err != nil {
		b.Fatal(err)
	}
	c, err := testbed.Start(testbed.Config{Nodes: nodes, Env: []string{"TMPDIR=/dev/shm"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, mode := range []string{"shared", "preload"} {
		b.Run(fmt.Sprintf("nodes=%d/MB=%d/%s", nodes, size>>20, mode), func(b *testing.B) {
			args := []string{"--spawn-degree", "8", "--ssh-connect-timeout", "60s", prog}
			if mode == "preload" {
				args = append([]string{"--preload-binary"}, args...)
			}
			cpu := childCPU()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(filepath.Join(path, "mpirun"), args...)
				cmd.Env = append(os.Environ(), c.Env()...)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
			b.ReportMetric((childCPU()-cpu).Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// Our PMI services against MPICH's Hydra (mpiexec.hydra), and against Open
// MPI's own mpirun for Open MPI programs, on the very same testbed nodes in
// one run. The other launcher reaches the nodes with OpenSSH's client
// through the testbed's ssh_config, the way it would reach a real cluster.
// Every testbed node shares this machine's cores, so what a real cluster
// does in parallel on its nodes is serialised here, for both launchers.

// benchPrograms compiles testdata/bench/pmibench.c against Slurm's libpmi2
// (Hydra serves PMI-2 to that client too) and the MPICH programs of
// testdata/bench/mpi, once.
var benchPrograms = sync.OnceValues(func() (string, error) {
	dir := filepath.Join(bin, "bench")
	if _, err := os.Stat("/usr/include/slurm/pmi2.h"); err == nil {
		err := compileC(dir, "testdata/bench/pmibench.c", "cc", []string{"-O2", "-Wall", "-I/usr/include/slurm"}, []string{"-lpmi2"})
		if err != nil {
			return "", err
		}
	}
	if cc, err := exec.LookPath("mpicc.mpich"); err == nil {
		return dir, compileC(dir, "testdata/bench/mpi/*.c", cc, []string{"-O2"}, nil)
	}
	return dir, nil
})

// benchProgram returns a compiled benchmark program, or skips.
func benchProgram(b *testing.B, name string) string {
	p := testProgram(b, benchPrograms, "", name)
	if _, err := os.Stat(p); err != nil {
		b.Skipf("%s was not built: it needs libpmi2-0-dev (pmibench) or mpich and libmpich-dev (initbench)", name)
	}
	return p
}

// pmiRounds is how many rounds pmibench times; it reports their median.
const pmiRounds = "10"

// BenchmarkPMI runs pmibench (see its header) under our mpirun and under
// mpiexec.hydra for 64 to 512 ranks on 16 to 64 nodes, and reports the
// slowest rank's median time of each measure for both launchers, in
// milliseconds, and Hydra's time divided by ours ("x-" metrics: above 1,
// we are faster). PMIX_Ring and our allgather have no counterpart in
// Hydra and are reported for us alone, beside our put+fence (the
// comparison of Figure 9 of Chakraborty et al.).
//
//	go test -run '^$' -bench PMI -benchtime 1x -timeout 3h ./e2e
func BenchmarkPMI(b *testing.B) {
	prog := benchProgram(b, "pmibench")
	c, hydra := hydraCluster(b, 64)
	for _, s := range []struct{ ranks, nodes int }{{64, 16}, {128, 32}, {256, 64}, {512, 64}} {
		b.Run(fmt.Sprintf("ranks=%d/nodes=%d", s.ranks, s.nodes), func(b *testing.B) {
			hosts := hostSlots(c, s.nodes, s.ranks/s.nodes)
			np := strconv.Itoa(s.ranks)
			ours, theirs := map[string]float64{}, map[string]float64{}
			for i := 0; i < b.N; i++ {
				addTo(ours, runBench(b, c, "pmibench", filepath.Join(bin, "mpirun"), "-H", hosts, "-np", np, prog, pmiRounds, "ext"))
				addTo(theirs, runBench(b, c, "pmibench", append(hydra, "-hosts", hosts, "-n", np, prog, pmiRounds)...))
			}
			for _, m := range []string{"fence", "get1", "modex1", "getall", "getall0", "getsolo"} {
				reportPair(b, "hydra", m, ours[m+"_us"], theirs[m+"_us"])
			}
			b.ReportMetric(ours["ring_us"]/1e3/float64(b.N), "ours-ring-ms")
			b.ReportMetric(ours["gather_us"]/1e3/float64(b.N), "ours-allgather-ms")
			// mpiexec serves every get of the job itself, one at a time.
			b.ReportMetric(theirs["cpu_us"]/1e6/float64(b.N), "hydra-mpiexec-cpu-s")
		})
	}
}

// BenchmarkMPIInit times MPI_Init of an MPICH program (the slowest rank's,
// median of 5 jobs) under our mpirun and under mpiexec.hydra, and the
// whole job as mpirun or mpiexec.hydra saw it.
//
//	go test -run '^$' -bench MPIInit -benchtime 1x ./e2e
func BenchmarkMPIInit(b *testing.B) {
	prog := benchProgram(b, "initbench")
	c, hydra := hydraCluster(b, 32)
	benchInit(b, c, prog, "hydra", func(hosts, np string) []string {
		return append(slices.Clone(hydra), "-hosts", hosts, "-n", np, prog)
	})
}

// initSizes are the jobs BenchmarkMPIInit and BenchmarkOpenMPIInit time.
var initSizes = []struct{ ranks, nodes int }{{32, 16}, {128, 32}}

// benchInit runs initbench (prog) alternately under our mpirun and under
// the other launcher, whose command line for hosts and np is theirs, 5
// times per b.N at each of initSizes, and reports the median slowest
// MPI_Init and the median job, as the launcher saw it, of both.
func benchInit(b *testing.B, c *testbed.Cluster, prog, them string, theirs func(hosts, np string) []string) {
	for _, s := range initSizes {
		b.Run(fmt.Sprintf("ranks=%d/nodes=%d", s.ranks, s.nodes), func(b *testing.B) {
			hosts := hostSlots(c, s.nodes, s.ranks/s.nodes)
			np := strconv.Itoa(s.ranks)
			var init, job [2][]float64 // ours, theirs
			for i := 0; i < 5*b.N; i++ {
				for l, cmd := range [][]string{
					{filepath.Join(bin, "mpirun"), "-H", hosts, "-np", np, prog},
					theirs(hosts, np),
				} {
					start := time.Now()
					init[l] = append(init[l], runBench(b, c, "initbench", cmd...)["init_us"])
					job[l] = append(job[l], float64(time.Since(start).Microseconds()))
				}
			}
			reportPair(b, them, "init", median(init[0]), median(init[1]))
			reportPair(b, them, "job", median(job[0]), median(job[1]))
		})
	}
}

// openMPIBenchPrograms compiles testdata/bench/mpi with Open MPI's
// compiler, once.
var openMPIBenchPrograms = sync.OnceValues(func() (string, error) {
	cc, err := exec.LookPath("mpicc.openmpi")
	if err != nil {
		return "", errMissing
	}
	dir := filepath.Join(bin, "bench-openmpi")
	return dir, compileC(dir, "testdata/bench/mpi/*.c", cc, []string{"-O2"}, nil)
})

// BenchmarkOpenMPIInit is BenchmarkMPIInit for an Open MPI program: our
// mpirun, whose orteds serve it PMIx, against Open MPI's own mpirun
// (ORTE: mpirun.openmpi and its orteds), on the same nodes with the same
// ranks per node. Both mpiruns run on this machine, outside the nodes;
// ORTE reaches the nodes with OpenSSH's client through the testbed's
// ssh_config, and its orteds spawn each other along ORTE's default tree.
// Nodes have their own hostnames (UTS), which Open MPI needs.
//
//	go test -tags pmix -run '^$' -bench OpenMPIInit -benchtime 1x ./e2e
func BenchmarkOpenMPIInit(b *testing.B) {
	if !pmix.Available {
		b.Skip("built without PMIx: go test -tags pmix (needs libpmix-dev)")
	}
	if os.Geteuid() != 0 {
		b.Skip("Open MPI on the testbed needs a hostname per node (UTS namespaces: root)")
	}
	prog := testProgram(b, openMPIBenchPrograms, "Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)", "initbench")
	ompi, err := exec.LookPath("mpirun.openmpi")
	if err != nil {
		b.Skip("Open MPI's mpirun.openmpi is not installed (apt-get install openmpi-bin)")
	}
	// ORTE starts "orted" by name on the nodes, where the PATH may find
	// ours first (bin/testbed puts its own directory first): name
	// Open MPI's, installed beside its mpirun, or ORTE reports its
	// daemons unreachable ("no path to node002").
	installed, err := filepath.EvalSymlinks(ompi)
	if err != nil {
		b.Fatal(err)
	}
	orted := filepath.Join(filepath.Dir(installed), "orted")
	if _, err := os.Stat(orted); err != nil {
		b.Skipf("Open MPI's orted is not beside %s", installed)
	}
	c, ssh := sshCluster(b, testbed.Config{Nodes: 32, UTS: true})
	benchInit(b, c, prog, "ompi", func(hosts, np string) []string {
		return []string{ompi, "--allow-run-as-root", "--mca", "plm_rsh_agent", ssh,
			"--mca", "orte_launch_agent", orted, "-H", hosts, "-np", np, prog}
	})
}

// hydraCluster starts a testbed of n nodes and returns it with the start
// of a Hydra command line that reaches its nodes: Hydra's ssh launcher
// runs a wrapper that hands ssh the testbed's ssh_config. Without Hydra
// or OpenSSH's client the benchmark is skipped.
func hydraCluster(b *testing.B, n int) (*testbed.Cluster, []string) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		b.Skip("MPICH's mpiexec.hydra is not installed (apt-get install mpich)")
	}
	c, ssh := sshCluster(b, testbed.Config{Nodes: n})
	return c, []string{hydra, "-launcher", "ssh", "-launcher-exec", ssh}
}

// sshCluster starts a testbed and returns it with the path of a wrapper
// that runs OpenSSH's client with the testbed's ssh_config, for other
// launchers to reach its nodes with. Without OpenSSH's client the
// benchmark is skipped.
func sshCluster(b *testing.B, cfg testbed.Config) (*testbed.Cluster, string) {
	if _, err := exec.LookPath("ssh"); err != nil {
		b.Skip("the other launcher needs OpenSSH's client (apt-get install openssh-client)")
	}
	c, err := testbed.Start(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	wrapper := filepath.Join(c.Dir(), "ssh")
	script := "#!/bin/sh\nexec ssh -F " + c.SSHConfigPath() + ` "$@"` + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	return c, wrapper
}

// hostSlots is "node001:slots,…" for the first n nodes.
func hostSlots(c *testbed.Cluster, n, slots int) string {
	var hosts []string
	for _, node := range c.Nodes()[:n] {
		hosts = append(hosts, fmt.Sprintf("%s:%d", node.Name, slots))
	}
	return strings.Join(hosts, ",")
}

// runBench runs a job against the cluster and returns the key=value
// numbers of the line it printed that starts with name, and as cpu_us the
// CPU time of the launcher process itself (mpirun, mpiexec.hydra). The
// job must succeed and leave nothing running on the nodes.
func runBench(b *testing.B, c *testbed.Cluster, name string, cmdline ...string) map[string]float64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cmd := exec.CommandContext(ctx, cmdline[0], cmdline[1:]...)
	cmd.Env = append(os.Environ(), c.Env()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if left := c.WaitNoLeftovers(10 * time.Second); len(left) > 0 {
		c.KillLeftovers()
		b.Fatalf("%s left processes running: %+v", filepath.Base(cmdline[0]), left)
	}
	if err != nil {
		b.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmdline, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	for _, l := range lines(stdout.String()) {
		fields := strings.Fields(l)
		if len(fields) == 0 || fields[0] != name {
			continue
		}
		vals := map[string]float64{"cpu_us": float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds())}
		for _, f := range fields[1:] {
			k, v, _ := strings.Cut(f, "=")
			vals[k], _ = strconv.ParseFloat(v, 64)
		}
		return vals
	}
	b.Fatalf("%s printed no %s line; stdout:\n%s", filepath.Base(cmdline[0]), name, stdout.Bytes())
	return nil
}

func addTo(sum, vals map[string]float64) {
	for k, v := range vals {
		sum[k] += v
	}
}

// reportPair reports a measure for us and for them (Hydra, Open MPI's
// mpirun), as sums over b.N in µs, and how many times faster we are.
func reportPair(b *testing.B, them, name string, ours, theirs float64) {
	n := float64(b.N)
	if strings.HasPrefix(name, "init") || strings.HasPrefix(name, "job") {
		n = 1 // already medians
	}
	b.ReportMetric(ours/1e3/n, "ours-"+name+"-ms")
	b.ReportMetric(theirs/1e3/n, them+"-"+name+"-ms")
	if ours > 0 {
		b.ReportMetric(theirs/ours, "x-"+name)
	}
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

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
//	go test -tags pmix -run '^$' -bench OpenSSHLaunch -benchtime 3x ./e2e
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
