package protocol

// Actions lists one zero value of every Action type. Each driver (the
// daemons' in daemon/, the simulator's in sim/) must carry out, or
// knowingly pass over, every one; their tests feed it to them, and a test
// here checks that the list is whole.
var Actions = []Action{
	Send{}, Dial{}, CloseLink{}, Spawn{}, SpawnStep{}, StopDaemon{}, ForwardInput{}, StartRanks{},
	StageTo{}, SignalRanks{}, SetTimer{}, CancelTimer{}, Print{}, Warn{}, Waiting{},
	Reached{}, ForwardStdin{}, StopSelf{}, Exit{}, FenceDone{}, RingDone{},
	AllgatherDone{}, ServeModex{}, ModexAnswered{}, DVMUp{}, JobDone{}, ReleaseJob{}, JobStopped{}, DaemonsLost{},
	PlaceChildJob{}, ChildJobAnswered{},
	NamesAnswered{},
}
