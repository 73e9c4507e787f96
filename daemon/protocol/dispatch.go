package protocol

// Where a neighbour's message and a fired timer go, as Step does for
// the other events.

// handle dispatches a message from a neighbour.
func (m *Machine) handle(l LinkID, peer int, msg Message) {
	fromParent := peer == m.cfg.Parent && l == m.cfg.ParentLink
	switch msg := msg.(type) {
	case Addrs:
		m.gotAddrs(peer, msg.Entries)
	case Launch:
		m.receiveLaunch(msg)
	case Failure:
		if m.isChild(peer) {
			m.fail(msg)
		}
	case Milestone:
		if m.isChild(peer) {
			m.childMilestone(peer, msg)
		}
	case Teardown:
		if fromParent {
			m.teardown(msg.Kill)
		}
	case JobKill, JobEnd:
		if fromParent {
			m.dvmMessage(msg)
		}
	case Lost:
		if fromParent {
			m.lostAbove(msg.IDs)
		}
	case Signal:
		if fromParent {
			m.signal(msg)
		}
	case SignalAck:
		if m.isChild(peer) {
			m.acked(peer, msg.Seq)
		}
	case Skipped:
		if m.isChild(peer) {
			m.role.report(msg)
		}
	case CollectiveUp:
		if j := m.jobOf(msg.Job); j != nil && m.isChild(peer) && (msg.ID.Group == jobGroup || m.joinGroup(j, msg.ID.Group)) {
			m.collectives(j, j.coll.FromChild(peer, msg.ID, msg.Part))
		}
	case CollectiveDown:
		if j := m.jobOf(msg.Job); j != nil && fromParent {
			m.collectives(j, j.coll.FromParent(msg.ID, msg.Part))
		}
	case CollectiveProbe:
		if j := m.jobOf(msg.Job); j != nil && fromParent && msg.ID.Group != jobGroup && m.joinGroup(j, msg.ID.Group) {
			m.collectives(j, j.coll.Probed(msg.ID))
		}
	case RanksLeft:
		if j := m.jobOf(msg.Job); j != nil && m.isChild(peer) {
			m.childRanksLeft(j, peer)
		}
	case ModexRequest:
		m.modexRequest(msg)
	case ModexReply:
		m.modexReply(msg)
	case ChildJobRequest:
		m.childJobRequest(msg)
	case ChildJobReply:
		m.childJobReply(msg)
	case Pending:
		m.pendingFrom(peer, msg)
	case NamePublish, NameLookup, NameUnpublish:
		m.nameRequest(msg)
	case NameReply:
		m.nameReply(msg)
	default:
		m.warn("unexpected message %T from daemon %d", msg, peer)
	}
}

func (m *Machine) timerFired(t Timer) {
	switch t.Kind {
	case CallbackTimer:
		m.callbackExpired(t.ID)
	case GraceTimer:
		m.graceOver(t.ID)
	case ProgressTimer:
		m.progressDue()
	case GuardsTimer:
		m.guardsActed(t.ID)
	case ExitWaitTimer:
		m.exitWaitOver(t.ID)
	case LostWaitTimer:
		m.lostWaitOver(t.ID)
	case LookupTimer:
		m.lookupTimedOut(t.ID)
	case SlotWaitTimer:
		if m.root != nil {
			m.root.slotWaitOver(t.ID)
		}
	case DrainTimer, JobTimer, StopTimer:
		if m.root != nil {
			m.root.timerFired(t)
		}
	}
}
