package sim

import "math"

// The shared cores of a testbed that runs every node on one machine: work
// is queued on them first come first served (fifoCPU), or every piece of
// work in progress gets an equal share of them as a time-sharing kernel
// gives (fairCPU). Work is asked for at the current virtual time, which
// never goes back.

// fifoCPU serves work in the order it came, on whichever core frees up
// first: picking the earliest free core is the whole queue.
type fifoCPU struct {
	freeAt []int64 // when each core is done with the work it was given
}

func newFIFOCPU(cores int) *fifoCPU { return &fifoCPU{freeAt: make([]int64, cores)} }

// run queues work ticks of CPU at time now and returns when it is done.
func (c *fifoCPU) run(now, work int64) int64 {
	first := 0
	for i, t := range c.freeAt {
		if t < c.freeAt[first] {
			first = i
		}
	}
	done := max(now, c.freeAt[first]) + work
	c.freeAt[first] = done
	return done
}

// fairCPU shares its cores equally among the work in progress (processor
// sharing): k pieces of work on c cores each run at min(1, c/k) of a core.
type fairCPU struct {
	cores int
	work  []*cpuWork
	last  int64 // when every piece's left was last brought up to date
	gen   int64 // the completion event in force
}

type cpuWork struct {
	left float64 // ticks of CPU still to run
	then func()
}

func (c *fairCPU) rate() float64 { return min(1, float64(c.cores)/float64(len(c.work))) }

// advance runs every piece of work in progress up to now.
func (c *fairCPU) advance(now int64) {
	if len(c.work) > 0 {
		ran := float64(now-c.last) * c.rate()
		for _, w := range c.work {
			w.left -= ran
		}
	}
	c.last = now
}

// compute runs work ticks of CPU from now on the shared cores, then calls
// then (if not nil) at the virtual time the work is done. Without shared
// cores the work takes its own time.
func (s *Sim) compute(work int64, then func()) {
	if then == nil {
		then = func() {}
	}
	switch {
	case work <= 0:
		then()
	case s.fair != nil:
		s.fair.advance(s.now)
		s.fair.work = append(s.fair.work, &cpuWork{left: float64(work), then: then})
		s.scheduleFair()
	case s.fifo != nil:
		s.push(s.fifo.run(s.now, work), then)
	default:
		s.push(s.now+work, then)
	}
}

// scheduleFair sets the event of the next piece of shared work to end.
func (s *Sim) scheduleFair() {
	c := s.fair
	c.gen++
	if len(c.work) == 0 {
		return
	}
	least := c.work[0].left
	for _, w := range c.work[1:] {
		least = min(least, w.left)
	}
	gen := c.gen
	s.push(s.now+int64(math.Ceil(max(least, 0)/c.rate())), func() {
		if c.gen != gen {
			return // more work came meanwhile
		}
		c.advance(s.now)
		var done []func()
		kept := c.work[:0]
		for _, w := range c.work {
			if w.left <= 0.5 {
				done = append(done, w.then)
			} else {
				kept = append(kept, w)
			}
		}
		clear(c.work[len(kept):])
		c.work = kept
		s.scheduleFair()
		for _, then := range done {
			then()
		}
	})
}
