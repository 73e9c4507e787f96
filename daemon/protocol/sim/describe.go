package sim

import (
	"fmt"
	"strings"

	"prsh/daemon/protocol"
	"prsh/modex/collective"
	"prsh/routed"
	"prsh/spawn"
)

// Describe words an action for a trace, short enough to read a launch
// like a story; peer turns a link into the daemon at its other end.
// Warnings are left out ("" is returned).
func Describe(a protocol.Action, peer func(protocol.LinkID) int) string {
	switch a := a.(type) {
	case protocol.Send:
		return fmt.Sprintf("-> d%d %s", peer(a.Link), Message(a.Msg))
	case protocol.Dial:
		return fmt.Sprintf("dial d%d", a.Peer)
	case protocol.CloseLink:
		return fmt.Sprintf("close link to d%d", peer(a.Link))
	case protocol.Spawn:
		return fmt.Sprintf("spawn d%d on %s", a.Node.ID, a.Node.Host)
	case protocol.SpawnStep:
		ids := make([]string, len(a.Nodes))
		for i, n := range a.Nodes {
			ids[i] = fmt.Sprintf("d%d", n.ID)
		}
		return fmt.Sprintf("spawn %s in one step", strings.Join(ids, " "))
	case protocol.StopDaemon:
		if a.Kill {
			return fmt.Sprintf("kill the session of d%d", a.ID)
		}
		return fmt.Sprintf("stop the session of d%d", a.ID)
	case protocol.ForwardInput:
		return ""
	case protocol.StartRanks:
		return fmt.Sprintf("start ranks %v", a.Ranks)
	case protocol.SignalRanks:
		return fmt.Sprintf("signal ranks %d", a.Sig)
	case protocol.SetTimer:
		return fmt.Sprintf("set %s timer %dms", timerName(a.Timer), a.MS)
	case protocol.CancelTimer:
		return ""
	case protocol.Print:
		if a.Job != 0 {
			return fmt.Sprintf("print to job %d's client: %s", a.Job, a.Line)
		}
		return "print " + a.Line
	case protocol.DVMUp:
		return "DVM up"
	case protocol.DaemonsLost:
		return fmt.Sprintf("lost daemons %v", a.IDs)
	case protocol.JobDone:
		return fmt.Sprintf("job %d done: status %d", a.Job, a.Status)
	case protocol.ReleaseJob:
		return fmt.Sprintf("release job %d", a.Job)
	case protocol.JobStopped:
		return fmt.Sprintf("job %d stopped: its client stops", a.Job)
	case protocol.Warn:
		return "warn: " + a.Line
	case protocol.Waiting:
		if a.Line == "" {
			return "waiting over"
		}
		return "waiting: " + a.Line
	case protocol.Reached:
		return "reached " + protocol.MilestoneNames[a.Kind]
	case protocol.ForwardStdin:
		return "forward stdin"
	case protocol.StopSelf:
		return "stop self"
	case protocol.RingDone:
		return fmt.Sprintf("ring %d done: %d answers", a.Seq, len(a.Answers))
	case protocol.FenceDone:
		if a.Group != "" {
			return fmt.Sprintf("fence %d of %s done: %d keys, gone %v", a.Seq, a.Group, len(a.Puts), a.Gone)
		}
		return fmt.Sprintf("fence %d done: %d keys", a.Seq, a.View.Len())
	case protocol.ServeModex:
		return fmt.Sprintf("serve rank %d's data to d%d#%d", a.Rank, a.From, a.ID)
	case protocol.PlaceChildJob:
		return fmt.Sprintf("place a child job for d%d#%d (rank %d of job %d), slots used %v, kept %v", a.From, a.ID, a.Rank, a.Job, a.Used, a.Kept)
	case protocol.ChildJobAnswered:
		if a.Err != "" {
			return fmt.Sprintf("child job #%d refused: %s", a.ID, a.Err)
		}
		return fmt.Sprintf("child job #%d is job %d", a.ID, a.Child)
	case protocol.ModexAnswered:
		return fmt.Sprintf("direct modex #%d answered: %q %s", a.ID, a.Data, a.Err)
	case protocol.NamesAnswered:
		return fmt.Sprintf("names #%d answered: %s %s", a.ID, names(a.Names), a.Err)
	case protocol.AllgatherDone:
		return fmt.Sprintf("allgather %d done: %d values", a.Seq, len(a.Values))
	case protocol.Exit:
		s := fmt.Sprintf("exit %d", a.Status)
		if a.Abandon {
			s += " abandoning"
		}
		if a.Late != nil {
			s += fmt.Sprintf(" late=%v", a.Late)
		}
		return s
	}
	return fmt.Sprintf("%T", a)
}

// Message words a message for a trace.
func Message(m protocol.Message) string {
	switch m := m.(type) {
	case protocol.Welcome:
		return fmt.Sprintf("Welcome nodes=%s", nodeIDs(m.Nodes))
	case protocol.Addrs:
		return fmt.Sprintf("Addrs %s", entryIDs(m.Entries))
	case protocol.Launch:
		if m.Sparse {
			return fmt.Sprintf("Launch job %d %v (sparse)", m.Job, m.RankNode)
		}
		if m.Job != 0 {
			return fmt.Sprintf("Launch job %d %v", m.Job, m.RankNode)
		}
		return fmt.Sprintf("Launch %v", m.RankNode)
	case protocol.Failure:
		if m.Job != 0 {
			return fmt.Sprintf("Failure %d %q (job %d)", m.Status, m.Msg, m.Job)
		}
		if m.Lost != 0 {
			return fmt.Sprintf("Failure %d %q (lost d%d)", m.Status, m.Msg, m.Lost)
		}
		return fmt.Sprintf("Failure %d %q", m.Status, m.Msg)
	case protocol.Milestone:
		if m.Job != 0 {
			return fmt.Sprintf("Milestone %s (job %d)", protocol.MilestoneNames[m.Kind], m.Job)
		}
		return "Milestone " + protocol.MilestoneNames[m.Kind]
	case protocol.RanksLeft:
		return "RanksLeft" + ofJob(m.Job)
	case protocol.JobKill:
		return fmt.Sprintf("JobKill %d", m.Job)
	case protocol.JobEnd:
		return fmt.Sprintf("JobEnd %d", m.Job)
	case protocol.Lost:
		return fmt.Sprintf("Lost %v", m.IDs)
	case protocol.Teardown:
		return fmt.Sprintf("Teardown kill=%v", m.Kill)
	case protocol.Signal:
		return fmt.Sprintf("Signal %d ack=%v", m.Sig, m.Ack)
	case protocol.SignalAck:
		return "SignalAck"
	case protocol.Skipped:
		return fmt.Sprintf("Skipped d%d", m.ID)
	case protocol.CollectiveUp:
		return fmt.Sprintf("CollectiveUp %v: %s%s", m.ID, partUp(m.ID, m.Part), ofJob(m.Job))
	case protocol.CollectiveDown:
		return fmt.Sprintf("CollectiveDown %v: %s%s", m.ID, partDown(m.ID, m.Part), ofJob(m.Job))
	case protocol.CollectiveProbe:
		return fmt.Sprintf("CollectiveProbe %v%s", m.ID, ofJob(m.Job))
	case protocol.ModexRequest:
		return fmt.Sprintf("ModexRequest d%d#%d for rank %d of d%d", m.From, m.ID, m.Rank, m.To)
	case protocol.ModexReply:
		return fmt.Sprintf("ModexReply for d%d#%d: %q %s", m.To, m.ID, m.Data, m.Err)
	case protocol.Pending:
		return fmt.Sprintf("Pending %d %v", m.Missing, m.Slow)
	case protocol.ChildJobRequest:
		return fmt.Sprintf("ChildJobRequest d%d#%d from rank %d%s", m.From, m.ID, m.Rank, ofJob(m.Job))
	case protocol.ChildJobReply:
		if m.Err != "" {
			return fmt.Sprintf("ChildJobReply for d%d#%d: %s", m.To, m.ID, m.Err)
		}
		return fmt.Sprintf("ChildJobReply for d%d#%d: job %d", m.To, m.ID, m.Child)
	case protocol.NamePublish:
		return fmt.Sprintf("NamePublish d%d#%d %s job-only=%v (job %d rank %d)", m.From, m.ID, nameValues(m.Names), m.JobOnly, m.Job, m.Rank)
	case protocol.NameLookup:
		return fmt.Sprintf("NameLookup d%d#%d %v wait=%v timeout=%dms (job %d)", m.From, m.ID, m.Keys, m.Wait, m.TimeoutMS, m.Job)
	case protocol.NameUnpublish:
		return fmt.Sprintf("NameUnpublish d%d#%d %v (job %d rank %d)", m.From, m.ID, m.Keys, m.Job, m.Rank)
	case protocol.NameReply:
		return fmt.Sprintf("NameReply for d%d#%d: %s %s", m.To, m.ID, names(m.Names), m.Err)
	}
	return fmt.Sprintf("%T", m)
}

// ofJob names a DVM job after a message of one.
func ofJob(job int) string {
	if job == 0 {
		return ""
	}
	return fmt.Sprintf(" (job %d)", job)
}

// partUp and partDown count what a collective's part holds.
func partUp(id collective.ID, p collective.Part) string {
	switch id.Op {
	case collective.Allgather:
		return fmt.Sprintf("%d values", len(p.Values))
	case collective.Ring:
		return fmt.Sprintf("%d entries", len(p.Ring))
	}
	return fmt.Sprintf("%d keys%s", len(p.KVs), gone(p))
}

// gone names a group's members that left before its fence, if any.
func gone(p collective.Part) string {
	if len(p.Gone) == 0 {
		return ""
	}
	return fmt.Sprintf(", gone %v", p.Gone)
}

func partDown(id collective.ID, p collective.Part) string {
	switch id.Op {
	case collective.Allgather:
		return fmt.Sprintf("%d values", len(p.Ordered))
	case collective.Ring:
		return fmt.Sprintf("%d answers", len(p.Ring))
	}
	return fmt.Sprintf("%d keys%s", len(p.KVs), gone(p))
}

func nodeIDs(ns []spawn.Node) string {
	ids := make([]string, len(ns))
	for i, n := range ns {
		ids[i] = fmt.Sprint(n.ID)
	}
	return "[" + strings.Join(ids, " ") + "]"
}

// entryIDs lists the ids of address entries; a tombstone (a skipped
// daemon, no address) is marked with a cross.
func entryIDs(es routed.Entries) string {
	ids := make([]string, 0, es.Len())
	for e := range es.All() {
		id := fmt.Sprint(e.ID)
		if e.Addr == "" {
			id += "✗"
		}
		ids = append(ids, id)
	}
	return "[" + strings.Join(ids, " ") + "]"
}

func timerName(t protocol.Timer) string {
	switch t.Kind {
	case protocol.CallbackTimer:
		return fmt.Sprintf("callback(d%d)", t.ID)
	case protocol.GraceTimer:
		return "kill-grace"
	case protocol.DrainTimer:
		return "drain"
	case protocol.JobTimer:
		return "job-timeout"
	case protocol.StopTimer:
		return "stop-wait"
	case protocol.ProgressTimer:
		return "progress"
	case protocol.GuardsTimer:
		return fmt.Sprintf("guards(d%d)", t.ID)
	case protocol.ExitWaitTimer:
		return fmt.Sprintf("exit-wait(d%d)", t.ID)
	case protocol.LostWaitTimer:
		return fmt.Sprintf("lost-wait(d%d)", t.ID)
	case protocol.LookupTimer:
		return fmt.Sprintf("lookup(%d)", t.ID)
	}
	return fmt.Sprint(t.Kind)
}

// names words published names for a trace: key=value, with the owner.
func names(ns []protocol.Name) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = fmt.Sprintf("%s=%s(job %d rank %d)", n.Key, n.Value, n.Job, n.Rank)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// nameValues words the names of a request: key=value.
func nameValues(ns []protocol.Name) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		parts[i] = n.Key + "=" + n.Value
	}
	return "[" + strings.Join(parts, " ") + "]"
}
