package dvm

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"prsh/errmgr"
)

// Copies runs copies of one job from one client (mpirun --dvm --cc), as
// many at a time as the DVM's slots hold: each copy is placed on slots
// no other running copy of the client holds, and one that does not fit
// waits for a copy to end. A client for a thousand small jobs, instead of
// a thousand clients: a client process costs more CPU than the job it
// submits. The DVM places nothing itself; other clients' jobs are not
// counted.
type Copies struct {
	Numbers []int // each copy's number ({cc} in its command line)
	// Slots are the slots of each DVM daemon id that the copies may use.
	Slots []int
	// Plan plans copy n over the free slots, a list of HOST:SLOTS;
	// with nil, over all of Slots (the copy will run alone).
	Plan  func(n int, free []string) (Job, error)
	Hosts []string // the node of each DVM daemon id
	Dial  func() (*Conn, error)
	// Signals: SIGINT, SIGTERM and SIGHUP end every running copy and
	// start no other; any other goes to every running copy.
	Signals <-chan os.Signal
	Stderr  io.Writer
}

// copyEnd is a copy's end: its number, status and the slots it held.
type copyEnd struct {
	n, status int
	held      []int
}

// copyRun is Copies as they run: the slots in use, the copies running
// and those that failed.
type copyRun struct {
	Copies
	used    []int // ranks of running copies on each daemon id
	running int
	ends    chan copyEnd
	failed  map[int]int // status of each failed copy
	fan     *fanout
}

// Run runs every copy and returns the status mpirun exits with: 0 if
// every copy ended with 0, else the first failed copy's, after a line
// naming the copies that failed. An interrupt, or a DVM that no longer
// answers, starts no other copy.
func (c Copies) Run() int {
	r := &copyRun{Copies: c, used: make([]int, len(c.Slots)), ends: make(chan copyEnd), failed: map[int]int{}, fan: newFanout(c.Signals)}
	started := 0
	for ; started < len(c.Numbers) && !r.fan.ending(); started++ {
		n := c.Numbers[started]
		job, err := r.place(n)
		if err != nil {
			fmt.Fprintf(c.Stderr, "mpirun: copy %d: %v\n", n, err)
			r.failed[n] = statusUsage
			continue
		}
		if !r.start(n, job) {
			break
		}
	}
	for r.running > 0 {
		r.reap()
	}
	r.fan.stop()
	return c.summary(r.failed, started)
}

// place plans copy n over the free slots, waiting for running copies to
// end while it does not fit. One that does not fit even once none runs
// (more ranks than slots, with --oversubscribe) runs alone over every
// slot; one that cannot be planned even so is an error.
func (r *copyRun) place(n int) (Job, error) {
	job, err := r.placeFree(n)
	if err != nil && r.running > 0 {
		if _, alone := r.Plan(n, nil); alone != nil {
			return Job{}, alone
		}
		for err != nil && r.running > 0 {
			r.reap()
			job, err = r.placeFree(n)
		}
	}
	if err != nil { // no copy runs
		return r.Plan(n, nil)
	}
	return job, nil
}

// start runs copy n in the background, holding its slots; false once
// the client is ending.
func (r *copyRun) start(n int, job Job) bool {
	sigs, ok := r.fan.join() // before it starts, so that no interrupt misses it
	if !ok {
		return false
	}
	held := slices.Clone(job.Submit.App.RankNode)
	for _, id := range held {
		r.used[id]++
	}
	r.running++
	go func() { r.ends <- copyEnd{n, r.runCopy(n, job, sigs, r.fan), held} }()
	return true
}

// reap waits for a copy's end, frees its slots and records its failure.
func (r *copyRun) reap() {
	end := <-r.ends
	r.running--
	for _, id := range end.held {
		r.used[id]--
	}
	if end.status != 0 {
		r.failed[end.n] = end.status
	}
}

// runCopy submits copy n and follows it to its end.
func (c Copies) runCopy(n int, job Job, sigs chan os.Signal, fan *fanout) int {
	defer fan.leave(sigs)
	conn, err := c.Dial()
	if err != nil { // the DVM is gone: no other copy can run
		fan.end()
		fmt.Fprintf(c.Stderr, "mpirun: copy %d: %v\n", n, err)
		return errmgr.StatusFailed
	}
	job.Name, job.Signals, job.Stopped = "copy "+strconv.Itoa(n), sigs, fan.stopped
	return job.Run(conn)
}

var errNoSlot = errors.New("no free slot")

// statusUsage is a copy's status when it cannot be planned: its command
// line, once {cc} is replaced, is mpirun's bad input.
const statusUsage = 2

// placeFree plans copy n over the slots no running copy holds.
func (r *copyRun) placeFree(n int) (Job, error) {
	var free []string
	for id, slots := range r.Slots {
		if left := slots - r.used[id]; left > 0 {
			free = append(free, r.Hosts[id]+":"+strconv.Itoa(left))
		}
	}
	if len(free) == 0 {
		return Job{}, errNoSlot
	}
	return r.Plan(n, free)
}

// summary is the exit status, with a line naming the failed copies and
// counting those an interrupt (or the DVM's end) kept from starting.
func (c Copies) summary(failed map[int]int, started int) int {
	notStarted := ""
	if started < len(c.Numbers) {
		notStarted = fmt.Sprintf("; %d not started", len(c.Numbers)-started)
	}
	if len(failed) == 0 {
		if notStarted == "" {
			return 0
		}
		fmt.Fprintf(c.Stderr, "mpirun: %d of %d copies ran%s\n", started, len(c.Numbers), notStarted)
		return 128 + int(syscall.SIGINT)
	}
	nums := slices.Sorted(maps.Keys(failed))
	var list []string
	for _, n := range nums[:min(len(nums), 10)] {
		list = append(list, fmt.Sprintf("%d (status %d)", n, failed[n]))
	}
	if len(nums) > 10 {
		list = append(list, fmt.Sprintf("and %d more", len(nums)-10))
	}
	fmt.Fprintf(c.Stderr, "mpirun: %d of %d copies failed: %s%s\n", len(nums), len(c.Numbers), strings.Join(list, ", "), notStarted)
	return failed[nums[0]]
}

// fanout passes the client's signals to every running copy; the first
// SIGINT, SIGTERM or SIGHUP also stops new copies from starting.
type fanout struct {
	mu     sync.Mutex
	copies map[chan os.Signal]bool
	ended  bool
	// tstp: a Ctrl-Z went to the copies and the client has not stopped
	// for it yet; it stops at the first copy that says its ranks stopped.
	tstp bool
	quit chan struct{}
}

func newFanout(sigs <-chan os.Signal) *fanout {
	f := &fanout{copies: map[chan os.Signal]bool{}, quit: make(chan struct{})}
	go f.pass(sigs)
	return f
}

func (f *fanout) pass(sigs <-chan os.Signal) {
	for {
		select {
		case <-f.quit:
			return
		case sig := <-sigs:
			f.mu.Lock()
			switch sig {
			case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP:
				f.ended = true
			case syscall.SIGTSTP:
				f.tstp = true
			}
			for ch := range f.copies {
				select {
				case ch <- sig:
				default: // a copy that has not read its last eight signals is ending
				}
			}
			f.mu.Unlock()
		}
	}
}

// join adds a copy about to start; false once the client is ending.
func (f *fanout) join() (chan os.Signal, bool) {
	ch := make(chan os.Signal, 8)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return nil, false
	}
	f.copies[ch] = true
	return ch, true
}

func (f *fanout) leave(ch chan os.Signal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.copies, ch)
	close(ch) // the copy's signal forwarder ends
}

// stopped: a copy's ranks stopped; the client stops once per Ctrl-Z.
func (f *fanout) stopped() {
	f.mu.Lock()
	stop := f.tstp
	f.tstp = false
	f.mu.Unlock()
	if stop {
		syscall.Kill(os.Getpid(), syscall.SIGSTOP)
	}
}

func (f *fanout) stop() { close(f.quit) }

// end starts no other copy.
func (f *fanout) end() {
	f.mu.Lock()
	f.ended = true
	f.mu.Unlock()
}

// ending says whether a copy may still start.
func (f *fanout) ending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}
