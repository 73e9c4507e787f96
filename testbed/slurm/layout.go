package slurm

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// MaxNodes is the most compute nodes a cluster has: node I listens on
// 127.0.10.I, the controller on 127.0.10.254. The addresses live in the
// cluster's own network namespace, so they can clash with nothing on the
// host (the ssh testbed's nodes are 127.B.x.y with B ≥ 1 on the host's).
const MaxNodes = 250

const (
	controllerName = "slurmctl"
	controllerAddr = "127.0.10.254"
	slurmdBasePort = 17000 // node I's slurmd listens on 17000+I
)

// layout is where a cluster keeps its files, computed the same way by the
// caller and by the namespace's init (which gets only dir and nodes).
type layout struct {
	dir    string
	nodes  int
	shared string // sharedUnderTmp of Dir and Config.Shared
}

func (l layout) conf() string       { return filepath.Join(l.dir, "slurm.conf") }
func (l layout) hosts() string      { return filepath.Join(l.dir, "hosts") }
func (l layout) mungeDir() string   { return filepath.Join(l.dir, "munge") }
func (l layout) mungeKey() string   { return filepath.Join(l.mungeDir(), "munge.key") }
func (l layout) mungeSock() string  { return filepath.Join(l.mungeDir(), "munge.socket") }
func (l layout) logDir() string     { return filepath.Join(l.dir, "log") }
func (l layout) initLog() string    { return filepath.Join(l.logDir(), "init.log") }
func (l layout) stateDir() string   { return filepath.Join(l.dir, "state") }
func (l layout) runDir() string     { return filepath.Join(l.dir, "run") }
func (l layout) spool(i int) string { return filepath.Join(l.dir, "spool", nodeName(i)) }

// tmp is bound over /tmp in node i's mount namespace.
func (l layout) tmp(i int) string { return filepath.Join(l.dir, "tmp", nodeName(i)) }

func nodeName(i int) string { return "node" + strconv.Itoa(i) }

func nodeAddr(i int) string {
	return netip.AddrFrom4([4]byte{127, 0, 10, byte(i)}).String()
}

// env is what every process in the cluster needs besides its own
// environment: Slurm's commands and daemons read SLURM_CONF.
func (l layout) env() []string { return []string{"SLURM_CONF=" + l.conf()} }

// write creates the directories and files the daemons need.
func (l layout) write(cfg Config) error {
	dirs := []string{l.dir, l.logDir(), l.stateDir(), l.runDir()}
	for i := 1; i <= l.nodes; i++ {
		dirs = append(dirs, l.spool(i), l.tmp(i))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// munged refuses a key or socket directory others may write; others
	// may pass through it (not list it) to reach the socket, so that any
	// user can run salloc, while the key stays 0600.
	if err := os.MkdirAll(l.mungeDir(), 0o711); err != nil {
		return err
	}
	if err := os.Chmod(l.mungeDir(), 0o711); err != nil {
		return err
	}
	for i := 1; i <= l.nodes; i++ {
		if err := os.Chmod(l.tmp(i), 0o1777); err != nil {
			return err
		}
	}
	if err := writeMungeKey(l.mungeKey()); err != nil {
		return err
	}
	if err := os.WriteFile(l.hosts(), []byte(l.hostsFile()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(l.conf(), []byte(l.slurmConf(cfg.CPUs, cfg.BindTasks)), 0o644)
}

// writeMungeKey writes a fresh key, so that a cluster neither needs the
// package's /etc/munge/munge.key nor can talk to the host's munged.
func writeMungeKey(path string) error {
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Read(key); err != nil {
		return err
	}
	return os.WriteFile(path, key, 0o600)
}

func (l layout) hostsFile() string {
	var b strings.Builder
	b.WriteString("127.0.0.1 localhost\n")
	fmt.Fprintf(&b, "%s %s\n", controllerAddr, controllerName)
	for i := 1; i <= l.nodes; i++ {
		fmt.Fprintf(&b, "%s %s\n", nodeAddr(i), nodeName(i))
	}
	return b.String()
}

// slurmConf is a minimal configuration for several slurmd's on one host
// (see the package doc): no accounting, no cgroups, every node in one
// partition, one port and one spool directory per slurmd, daemons as root.
func (l layout) slurmConf(cpus int, bindTasks bool) string {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("ClusterName=testbed")
	line("SlurmctldHost=%s(%s)", controllerName, controllerAddr)
	line("AuthType=auth/munge")
	line("CredType=cred/munge")
	line("AuthInfo=socket=%s", l.mungeSock())
	line("SlurmUser=root")
	line("SlurmdUser=root")
	line("StateSaveLocation=%s", l.stateDir())
	line("SlurmdSpoolDir=%s", filepath.Join(l.dir, "spool", "%n"))
	line("SlurmctldPidFile=%s", filepath.Join(l.runDir(), "slurmctld.pid"))
	line("SlurmdPidFile=%s", filepath.Join(l.runDir(), "slurmd-%n.pid"))
	line("SlurmctldLogFile=%s", filepath.Join(l.logDir(), "slurmctld.log"))
	line("SlurmdLogFile=%s", filepath.Join(l.logDir(), "slurmd-%n.log"))
	line("ProctrackType=proctrack/linuxproc")
	if bindTasks {
		line("TaskPlugin=task/affinity")
	} else {
		line("TaskPlugin=task/none")
	}
	line("SelectType=select/cons_tres")
	line("SelectTypeParameters=CR_CPU")
	line("SlurmdParameters=config_overrides")
	line("MpiDefault=none")
	line("ReturnToService=2")
	line("AccountingStorageType=accounting_storage/none")
	line("JobAcctGatherType=jobacct_gather/none")
	line("JobCompType=jobcomp/none")
	line("KillWait=2") // seconds between SIGTERM and SIGKILL when a step is cancelled
	line("InactiveLimit=0")
	line("MailProg=/bin/true")
	for i := 1; i <= l.nodes; i++ {
		line("NodeName=%s NodeHostname=%s NodeAddr=%s Port=%d CPUs=%d RealMemory=1000 State=UNKNOWN",
			nodeName(i), nodeName(i), nodeAddr(i), slurmdBasePort+i, cpus)
	}
	line("PartitionName=all Nodes=ALL Default=YES MaxTime=INFINITE State=UP")
	return b.String()
}
