package sim

// cpu is a machine's processors shared by every process of a simulated
// launch, as on the testbed, where every node is a process group on one
// host: work is served first come, first served by whichever core frees
// up first. Work is requested at the current virtual time, which never
// goes back, so picking the earliest free core is the whole queue.
type cpu struct {
	freeAt []int64 // when each core is done with the work it was given
}

func newCPU(cores int) *cpu {
	if cores <= 0 {
		return nil // a node has a CPU of its own: no queue
	}
	return &cpu{freeAt: make([]int64, cores)}
}

// run queues work ticks of CPU at time now and returns when it is done.
// A nil cpu, or no work, runs at once.
func (c *cpu) run(now, work int64) int64 {
	if c == nil || work <= 0 {
		return now + max(work, 0)
	}
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
