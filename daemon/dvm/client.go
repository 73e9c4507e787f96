package dvm

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"

	"prsh/daemon/protocol"
	"prsh/errmgr"
	"prsh/iof"
)

// Place moves a job planned over planHosts (the node of each daemon id
// of the client's own plan) onto the DVM's daemons, by node name; a rank
// on a node the DVM lost cannot run.
func Place(app protocol.Launch, planHosts, dvmHosts, lost []string) (protocol.Launch, error) {
	idOf := make(map[string]int, len(dvmHosts))
	for id, h := range dvmHosts {
		idOf[h] = id
	}
	rankNode := make(protocol.RankMap, len(app.RankNode))
	for r, planID := range app.RankNode {
		if planID < 0 || planID >= len(planHosts) {
			return app, fmt.Errorf("rank %d is placed on daemon %d of %d", r, planID, len(planHosts))
		}
		host := planHosts[planID]
		if slices.Contains(lost, host) {
			return app, fmt.Errorf("rank %d is placed on %s, which the DVM lost", r, host)
		}
		id, ok := idOf[host]
		if !ok {
			return app, fmt.Errorf("%s is not a node of the DVM", host)
		}
		rankNode[r] = id
	}
	app.RankNode = rankNode
	return app, nil
}

// Job is a client's job in a DVM, as a plain mpirun would show it.
type Job struct {
	Submit Submit
	Stdout io.Writer
	Stderr io.Writer
	Output iof.Options
	// Signals: SIGINT, SIGTERM and SIGHUP end the job; SIGTSTP stops its
	// ranks, then the client; any other goes to its ranks.
	Signals <-chan os.Signal
	// Stdin goes to the job's stdin rank (or all of them), as the DVM
	// asks for it; nil: their input ends at once.
	Stdin io.Reader
	// Name, if any, goes after "mpirun: " in the job's lines (a copy's
	// number, among copies).
	Name string
	// Stopped is called when the job's ranks stopped for a Ctrl-Z; nil:
	// the client stops itself.
	Stopped func()
}

// Run submits the job on conn and shows its output, failure line and
// status; it returns the status mpirun exits with.
func (j Job) Run(conn *Conn) int {
	defer conn.Close()
	if err := conn.WriteJSON(KindSubmit, j.Submit); err != nil {
		j.line(fmt.Sprintf("mpirun: cannot submit the job to the DVM: %v", err))
		return errmgr.StatusFailed
	}
	go j.forwardSignals(conn)
	wanted := make(chan struct{}, 1)
	defer close(wanted)
	go j.forwardInput(conn, wanted)
	term := iof.NewTerminal(j.Stdout, j.Stderr, j.Output)
	status, err := j.follow(conn, term, wanted)
	term.Flush()
	if err != nil {
		j.line(fmt.Sprintf("mpirun: lost the DVM before the job ended: %v", err))
		return errmgr.StatusFailed
	}
	if r, cut := term.CutShort(len(j.Submit.App.RankNode)); status == 0 && cut {
		j.line(fmt.Sprintf("mpirun: the output of rank %d was cut short on its way to mpirun", r))
		return errmgr.StatusFailed
	}
	return status
}

// line writes one of mpirun's lines about the job, named if it has a
// Name.
func (j Job) line(s string) {
	if j.Name != "" {
		if rest, ok := strings.CutPrefix(s, "mpirun: "); ok {
			s = "mpirun: " + j.Name + ": " + rest
		}
	}
	fmt.Fprintln(j.Stderr, s)
}

// follow reads the DVM's frames until the job's status.
func (j Job) follow(conn *Conn, term *iof.Terminal, wanted chan<- struct{}) (int, error) {
	for {
		kind, payload, err := conn.Read()
		if err != nil {
			return 0, noEOF(err)
		}
		switch kind {
		case KindOutput, KindOutputEnd, KindChildOutput, KindChildOutputEnd:
			c, err := OutputChunk(kind, payload)
			if err != nil {
				return 0, err
			}
			term.Send(c)
		case KindLine:
			j.line(string(payload))
		case KindInputWanted:
			select {
			case wanted <- struct{}{}:
			default:
			}
		case KindStopped: // its ranks are stopped: now the client
			if j.Stopped != nil {
				j.Stopped()
			} else {
				syscall.Kill(os.Getpid(), syscall.SIGSTOP)
			}
		case KindStatus:
			var s Status
			return s.Status, json.Unmarshal(payload, &s)
		}
	}
}

// forwardInput sends the client's stdin to the DVM, a chunk each time
// the DVM asks, then its end.
func (j Job) forwardInput(conn *Conn, wanted <-chan struct{}) {
	buf := make([]byte, iof.ChunkSize)
	var ended error
	for range wanted {
		if j.Stdin == nil || ended != nil {
			conn.Write(KindInputEnd, nil)
			return
		}
		var n int
		for n == 0 && ended == nil {
			n, ended = j.Stdin.Read(buf)
		}
		if n == 0 {
			conn.Write(KindInputEnd, nil)
			return
		}
		conn.Write(KindInput, buf[:n])
	}
}

// forwardSignals passes the client's signals to the DVM; a second
// interrupt (SIGINT, SIGTERM, SIGHUP) ends the client at once.
func (j Job) forwardSignals(conn *Conn) {
	interrupted := false
	for sig := range j.Signals {
		s, ok := sig.(syscall.Signal)
		if !ok {
			continue
		}
		if s == syscall.SIGINT || s == syscall.SIGTERM || s == syscall.SIGHUP {
			if interrupted {
				os.Exit(128 + int(s))
			}
			interrupted = true
		}
		conn.WriteJSON(KindSignal, Signal{Sig: int(s)})
	}
}

// Stop stops the DVM at uri and waits until it is down. A daemonized
// DVM's log (LogPath) goes with it when it stopped with 0 having lost no
// node; else its path is the note returned, for the user to read it.
func Stop(uri string) (note string, err error) {
	conn, hello, err := Dial(uri)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.Write(KindStop, nil); err != nil {
		return "", err
	}
	var s Status
	if err := conn.ReadJSON(KindStatus, &s); err != nil {
		return "", fmt.Errorf("%s: the DVM did not say it stopped: %w", uri, err)
	}
	log := LogPath(uri)
	if s.Status == 0 && len(hello.Lost) == 0 {
		os.Remove(log)
		return "", nil
	}
	if _, err := os.Stat(log); err != nil {
		return "", nil
	}
	return "the DVM's lines are kept in " + log, nil
}
