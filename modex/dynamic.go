package modex

// The ranks' requests beyond the key-value space: start a new job
// (MPI_Comm_spawn) and the name service (MPI_Publish_name and
// MPI_Lookup_name). Each PMI dialect (PMI-1, PMI-2, PMIx) turns its own
// wire into these values; the daemons carry them out the same way
// whichever dialect asked (issue 33).

// SpawnApp is one program of a spawn request: MPI_Comm_spawn asks for
// one, MPI_Comm_spawn_multiple for several, whose ranks follow each
// other in order in the new job.
type SpawnApp struct {
	Argv []string // the program and its arguments
	Env  []string // KEY=VALUE set in its ranks' environment, on top of the parent job's
	NP   int      // how many ranks run it
	// Info holds the MPI_Info hints the client gave for this program, by
	// the key it used (host, wdir, path, hostfile, map-by, …).
	Info map[string]string `json:",omitempty"`
}

// SpawnRequest is a rank's request for a new job.
type SpawnRequest struct {
	Apps []SpawnApp
	// Preput: key-value pairs put into the new job's key-value space
	// before its ranks start (MPICH's spawner preputs
	// PARENT_ROOT_PORT_NAME, which its children read in MPI_Init).
	Preput map[string]string `json:",omitempty"`
	// Info holds hints for the whole job (PMIx's job_info), by key.
	Info map[string]string `json:",omitempty"`
}
