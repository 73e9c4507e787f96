package plan

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"prsh/job"
	"prsh/job/compat"
)

// hostSource is the host list and where it came from, which messages
// about slots name.
type hostSource struct {
	hosts []job.Host
	from  string
	// slurmJob is the Slurm job whose allocation the hosts are; "" when
	// they come from elsewhere.
	slurmJob string
}

// hostList reads -H, else --hostfile, else MPIRUN_HOSTFILE or Hydra's
// HYDRA_HOST_FILE, else the batch system's allocation, else Open MPI's
// default hostfile, else runs on this host with a slot per CPU.
// MPIRUN_HOSTFILE comes before the allocation so that a testbed started
// inside a batch job keeps its own nodes.
func hostList(req Request, here Here) (hostSource, error) {
	if len(req.Hosts) > 0 {
		var hosts []job.Host
		for _, v := range req.Hosts {
			h, err := job.ParseHostList(v)
			if err != nil {
				return hostSource{}, err
			}
			hosts = append(hosts, h...)
		}
		return hostSource{hosts: hosts, from: "hosts from -H"}, nil
	}
	env := here.environ()
	paths := []string{req.Hostfile}
	for _, name := range compat.HostfileVars {
		paths = append(paths, env.getenv(name))
	}
	for _, path := range paths {
		if path != "" {
			hosts, err := job.ReadHostfile(path)
			return hostSource{hosts: hosts, from: "hosts from " + path}, err
		}
	}
	alloc, err := job.DetectAllocation(env.getenv)
	if err != nil || alloc != nil {
		return allocationSource(alloc), err
	}
	if path := compat.DefaultHostfile(env.getenv); path != "" {
		hosts, err := job.ReadHostfile(path)
		return hostSource{hosts: hosts, from: "hosts from " + path + " (" + compat.DefaultHostfileVar + ")"}, err
	}
	n := here.CPUs
	return hostSource{hosts: []job.Host{{Name: "localhost", Slots: n}}, from: "no hosts given: localhost with " + job.Slots(n)}, nil
}

func allocationSource(a *job.Allocation) hostSource {
	if a == nil {
		return hostSource{}
	}
	return hostSource{a.Hosts, "hosts from the batch allocation of " + a.Source, a.SlurmJob}
}

// displayAllocation prints the hosts and slots mpirun found, and where
// from (--display-allocation).
func displayAllocation(w io.Writer, src hostSource) {
	fmt.Fprintf(w, "mpirun: allocation (%s):\n", src.from)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, h := range src.hosts {
		limit := ""
		if h.MaxSlots > 0 {
			limit = "\tmax_slots=" + strconv.Itoa(h.MaxSlots)
		}
		fmt.Fprintf(tw, "    %s\tslots=%d%s\n", h.Name, h.Slots, limit)
	}
	tw.Flush()
}
