package daemon

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"prsh/daemon/protocol"
	"prsh/errmgr/proc"
	"prsh/iof"
	"prsh/job/binding"
)

// rank is one local application process.
type rank struct {
	id        int
	guard     *proc.Guard
	reaped    bool
	groupGone bool // reaped, and nothing left in its process group
	openPipes int
	pmi       *pmiService   // its PMI service, once started
	pmiDone   chan struct{} // closed when the server of its inherited PMI socket has returned
	portDone  chan struct{} // closed when the server of its PMI_PORT connection has returned
	portID    string        // its PMI_ID, a secret; "" without a PMI_PORT
	bound     binding.Binding
}

// startRanks starts this daemon's share of the ranks.
func (d *Daemon) startRanks(app protocol.Launch, mine []int) {
	d.app = app
	d.fanout.SetRanks(app.RankNode)
	d.startPMIx(app, mine)
	d.openPMIPort(len(mine))
	if len(mine) > 0 {
		d.openCgroup()
	}
	bound, bindErr := bindRanks(app.Bind, len(mine))
	for local, id := range mine {
		r := &rank{id: id, pmi: d.newPMIService(id), pmiDone: make(chan struct{}), portDone: make(chan struct{})}
		d.ranks[id] = r
		err := bindErr
		if err == nil {
			r.bound = bound[local]
			err = d.startRank(app, r, local, len(mine))
		} else {
			d.pmiNeverStarted(r)
		}
		if err != nil {
			r.reaped, r.groupGone = true, true
			d.next = append(d.next, protocol.RankNotStarted{Rank: id, Status: proc.ExecStatus(err), Err: err.Error()})
		}
	}
}

// startRank starts one rank's process and serves its PMI socket.
func (d *Daemon) startRank(app protocol.Launch, r *rank, local, localSize int) error {
	conn, pmiEnd, err := pmiSocket()
	if err != nil {
		d.pmiNeverStarted(r)
		return err
	}
	defer pmiEnd.Close() // the rank has its copy
	guard, err := d.command(app, r, local, localSize, pmiEnd)
	if err == nil {
		err = d.spawnRank(r, guard)
	}
	if err != nil {
		conn.Close()
		d.pmiNeverStarted(r)
		return err
	}
	d.servePMI(conn, r)
	return nil
}

// command builds the rank's process from its program (MPMD: each rank
// runs its own app context): argv[0] looked up in the daemon's PATH, or
// relative to the working directory when it has a slash.
func (d *Daemon) command(launch protocol.Launch, r *rank, local, localSize int, pmiEnd *os.File) (*proc.Guard, error) {
	id := r.id
	app, appNum := launch.AppOf(id)
	if len(app.Argv) == 0 {
		return nil, errors.New("no command to run")
	}
	wdir, err := workingDir(app)
	if err != nil {
		return nil, err
	}
	path, err := programPath(app.Argv[0], wdir)
	if staged, ok := d.stagedProgram(app.Argv[0]); ok {
		path, err = staged, nil
	}
	if err != nil {
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: app.Argv, Dir: wdir, ExtraFiles: []*os.File{pmiEnd}}
	// Open MPI's defaults go before the job's -x, which may change them.
	cmd.Env = append(append(os.Environ(), openMPIEnv...), app.Env...)
	cmd.Env = d.stagedLibraryPath(cmd.Env)
	cmd.Env = append(cmd.Env, d.rankEnv(launch, id, local, localSize)...)
	cmd.Env = append(cmd.Env, "OMPI_APPNUM="+strconv.Itoa(appNum))
	cmd.Env = append(cmd.Env, pmiEnv(d.machine.Job(), launch, id)...)
	cmd.Env = append(cmd.Env, d.pmiPortEnv(r)...)
	pmixEnv, err := d.pmixEnv(id)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(cmd.Env, pmixEnv...)
	// Each rank runs in its own process group, so a signal reaches what it
	// started too, under a guard that ends all it started when the job
	// ends or this daemon dies; in the job's cgroup, where there is one.
	guard, err := proc.GuardCommand(cmd)
	if err == nil && d.cgroup != nil {
		d.cgroup.Place(guard.Cmd)
	}
	return guard, err
}

// openCgroup makes the job's cgroup, where cgroup v2 is delegated to us;
// elsewhere the guards alone contain the ranks.
func (d *Daemon) openCgroup() {
	cg, err := proc.NewCgroup()
	if err != nil {
		d.log.Debug("no job cgroup: the rank guards alone contain the ranks", "error", err)
		return
	}
	d.log.Debug("job cgroup", "dir", cg.Dir())
	d.cgroup = cg
}

// checkCgroup learns from the guard just started whether the kernel
// starts processes in the job's cgroup (Linux 5.7 and later, clone3 not
// filtered). If the first guard could not start in it, the daemon does
// without; a later guard that could not (a transient fork failure) runs
// outside it, beside the guards already in it.
func (d *Daemon) checkCgroup(guard *proc.Guard) {
	switch {
	case d.cgroup == nil:
	case guard.OutsideCgroup == nil:
		d.cgroupHolds = true
	case !d.cgroupHolds:
		d.log.Debug("no job cgroup: cannot start a process in it (Linux < 5.7, or clone3 filtered); the rank guards alone contain the ranks", "error", guard.OutsideCgroup)
		d.removeCgroup()
		d.cgroup = nil
	default:
		d.log.Warn("a rank's guard runs outside the job cgroup", "error", guard.OutsideCgroup)
	}
}

// removeCgroup kills what is left in the job's cgroup and removes it.
func (d *Daemon) removeCgroup() {
	if d.cgroup == nil {
		return
	}
	if err := d.cgroup.Remove(2 * time.Second); err != nil {
		d.log.Warn("cannot remove the job cgroup", "dir", d.cgroup.Dir(), "error", err)
	}
}

// programPath finds argv0 as a shell would: in the PATH, or from the
// working directory when it has a slash.
func programPath(argv0, wdir string) (string, error) {
	path := argv0
	if filepath.Base(path) != path && !filepath.IsAbs(path) {
		path = filepath.Join(wdir, path)
	}
	path, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("cannot run %s: %w", argv0, proc.UnwrapExec(err))
	}
	return path, nil
}

func workingDir(app protocol.App) (string, error) {
	if app.Wdir != "" {
		if st, err := os.Stat(app.Wdir); err == nil && st.IsDir() {
			return app.Wdir, nil
		}
		if app.WdirSet {
			return "", fmt.Errorf("working directory %s does not exist", app.Wdir)
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return home, nil
	}
	return "/", nil
}

func (d *Daemon) rankEnv(app protocol.Launch, id, local, localSize int) []string {
	set := func(k string, v int) string { return k + "=" + strconv.Itoa(v) }
	size := len(app.RankNode)
	return []string{
		set("PRSH_RANK", id), set("PRSH_SIZE", size),
		set("PRSH_LOCAL_RANK", local), set("PRSH_LOCAL_SIZE", localSize),
		"PRSH_NODE=" + d.cfg.Node, set("PRSH_NODE_ID", d.cfg.ID),
		set("OMPI_COMM_WORLD_RANK", id), set("OMPI_COMM_WORLD_SIZE", size),
		set("OMPI_COMM_WORLD_LOCAL_RANK", local), set("OMPI_COMM_WORLD_LOCAL_SIZE", localSize),
		set("OMPI_COMM_WORLD_NODE_RANK", local),
		// Hydra's names, which MPICH users' wrapper scripts read (to
		// pick a GPU, say).
		set("MPI_LOCALRANKID", local), set("MPI_LOCALNRANKS", localSize),
	}
}

// spawnRank starts the process with its output on pipes that the daemon
// reads until EOF, whatever happens to the process.
func (d *Daemon) spawnRank(r *rank, guard *proc.Guard) error {
	cmd := guard.Cmd
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if d.app.MergeStderr {
		cmd.Stderr = outW
	}
	stdin, err := d.stdinFor(r, cmd)
	if err == nil && d.app.Bind.Report {
		_, err = io.WriteString(cmd.Stderr, d.bindingLine(r))
	}
	if err == nil {
		guard.BindTo(r.bound.CPUs)
		err = guard.Start()
		if err == nil {
			d.checkCgroup(guard)
		}
	} else {
		guard.Close()
	}
	outW.Close()
	errW.Close()
	if cmd.Stdin != nil {
		cmd.Stdin.(*os.File).Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if stdin != nil {
			stdin.Close()
		}
		return fmt.Errorf("cannot run %s: %w", cmd.Args[0], err)
	}
	if stdin != nil {
		d.fanout.AddRank(r.id, stdin)
	}
	r.guard, r.openPipes = guard, 2
	d.pump(r, iof.Stdout, outR)
	d.pump(r, iof.Stderr, errR)
	go func() {
		status := guard.Wait()
		d.awaitPMI(r)
		d.syncPMIx()
		d.post(rankReaped{r, status})
		guard.Reap() // once what the rank left behind is gone
	}()
	return nil
}

// pmiDrain bounds how long a reaped rank's PMI server may take to read
// what the rank wrote before it ended. Something the rank left behind
// may hold its socket open: the server is then stopped.
const pmiDrain = 2 * time.Second

// awaitPMI waits until the server of the rank's PMI connection has read
// everything, so that the machine learns how the rank used PMI
// (finalised or not, bad input) before it learns that the rank ended.
// The inherited socket is read to its end first, unless a PMI_PORT
// connection speaks for the rank: what the rank wrote there before it
// died may yet make it the speaker. Then no connection may claim the
// rank any more.
func (d *Daemon) awaitPMI(r *rank) {
	if r.pmi == nil {
		return
	}
	if r.pmi.speaker() != viaPort {
		drainPMI(r, r.pmiDone)
	}
	switch r.pmi.seal() {
	case viaPort:
		drainPMI(r, r.portDone)
	case nobody:
		r.pmi.stop()
	}
	d.forgetPMIPortID(r)
}

// drainPMI waits for a server to return, at most pmiDrain. A server
// waiting in a collective for the dead rank has nothing left to read: it
// is stopped at once.
func drainPMI(r *rank, done <-chan struct{}) {
	wait := pmiDrain
	if r.pmi.waiting.Load() {
		wait = 0
	}
	select {
	case <-done:
	case <-time.After(wait):
		r.pmi.stop()
		<-done
	}
}

func (d *Daemon) pump(r *rank, stream iof.Stream, pipe *os.File) {
	go func() {
		if err := iof.Pump(d.sink, r.id, stream, pipe); err != nil {
			d.log.Debug("output lost", "rank", r.id, "error", err)
		}
		pipe.Close()
		d.post(pipeClosed{r})
	}()
}

// rankReaped notes whether the rank's group is empty (its number may then
// be reused) and tells the machine how the rank ended.
func (d *Daemon) rankReaped(r *rank, ws syscall.WaitStatus) {
	r.reaped = true
	r.signalGroup(0)
	d.step(protocol.RankExited{Rank: r.id, Status: proc.ExitStatus(ws), How: proc.Describe(ws)})
}

// signalRanks signals every local rank's process group: a reaped rank's
// too, since what it left behind must go as well. SIGKILL also tells each
// guard to kill what left the group.
func (d *Daemon) signalRanks(sig syscall.Signal) {
	if sig == syscall.SIGKILL && d.cgroup != nil {
		d.cgroup.Kill()
	}
	for _, r := range d.ranks {
		r.signalGroup(sig)
		if sig == syscall.SIGKILL && r.guard != nil {
			r.guard.End()
		}
	}
}

// signalGroup signals the rank's process group unless it is known empty.
// Once a reaped rank's group is found empty it is never signalled again:
// its number is free for the system to give to someone else's group.
func (r *rank) signalGroup(sig syscall.Signal) {
	if r.groupGone || r.guard == nil {
		return
	}
	if err := syscall.Kill(-r.guard.Cmd.Process.Pid, sig); errors.Is(err, syscall.ESRCH) && r.reaped {
		r.groupGone = true
	}
}

// stdinFor gives the rank a pipe for its stdin when mpirun's stdin is for
// it, and returns the pipe's write end; other ranks read /dev/null.
func (d *Daemon) stdinFor(r *rank, cmd *exec.Cmd) (*os.File, error) {
	if d.app.StdinRank != protocol.StdinAll && d.app.StdinRank != r.id {
		return nil, nil
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = pr
	return pw, nil
}
