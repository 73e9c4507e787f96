package dvm

import (
	"errors"
	"fmt"
	"io"
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

// Run runs every copy and returns the status mpirun exits with: 0 if
// every copy ended with 0, else the first failed copy's, after a line
// naming the copies that failed. An interrupt, or a DVM that no longer
// answers, starts no other copy.
func (c Copies) Run() int {
	used := make([]int, len(c.Slots))
	ends := make(chan copyEnd)
	fan := newFanout(c.Signals)
	failed := map[int]int{}
	running := 0
	started := 0
	for ; started < len(c.Numbers); started++ {
		n := c.Numbers[started]
		job, err := c.placeFree(n, used)
		if err != nil && running > 0 {
			if _, err = c.Plan(n, nil); err == nil { // it fits once copies end
				for err = errNoSlot; err != nil && running > 0; {
					c.release(used, <-ends, failed)
					running--
					job, err = c.placeFree(n, used)
				}
			}
		}
		if err != nil && running == 0 {
			job, err = c.Plan(n, nil)
		}
		if err != nil {
			fmt.Fprintf(c.Stderr, "mpirun: copy %d: %v\n", n, err)
			failed[n] = statusUsage
			continue
		}
		sigs, ok := fan.join() // before it starts, so that no interrupt misses it
		if !ok {
			break
		}
		held := c.take(used, job)
		running++
		go func() { ends <- copyEnd{n, c.runCopy(n, job, sigs, fan), held} }()
	}
	for ; running > 0; running-- {
		c.release(used, <-ends, failed)
	}
	fan.stop()
	return c.summary(failed, started)
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
func (c Copies) placeFree(n int, used []int) (Job, error) {
	free := c.free(used)
	if len(free) == 0 {
		return Job{}, errNoSlot
	}
	return c.Plan(n, free)
}

// free lists the slots no running copy holds, as -H values.
func (c Copies) free(used []int) []string {
	var free []string
	for id, slots := range c.Slots {
		if left := slots - used[id]; left > 0 {
			free = append(free, c.Hosts[id]+":"+strconv.Itoa(left))
		}
	}
	return free
}

// take marks the slots of job's ranks as used and returns them.
func (c Copies) take(used []int, job Job) []int {
	held := slices.Clone(job.Submit.App.RankNode)
	for _, id := range held {
		used[id]++
	}
	return held
}

// release frees an ended copy's slots and records its failure.
func (c Copies) release(used []int, end copyEnd, failed map[int]int) {
	for _, id := range end.held {
		used[id]--
	}
	if end.status != 0 {
		failed[end.n] = end.status
	}
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
	nums := slices.Sorted(func(yield func(int) bool) {
		for n := range failed {
			if !yield(n) {
				return
			}
		}
	})
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
