package pmix

// App is one program of the job (an MPMD app context): its ranks are
// First up to First+Size-1, and Num is its MPI_APPNUM.
type App struct{ Num, First, Size int }

// Apps lists the job's programs; a job without AppFirst is one program.
func (j Job) Apps() []App {
	firsts := j.AppFirst
	if len(firsts) == 0 {
		firsts = []int{0}
	}
	apps := make([]App, len(firsts))
	for i, first := range firsts {
		end := len(j.RankNode)
		if i+1 < len(firsts) {
			end = firsts[i+1]
		}
		apps[i] = App{Num: i, First: first, Size: end - first}
	}
	return apps
}

// appOf returns the program of apps that rank runs.
func appOf(apps []App, rank int) App {
	for i := len(apps) - 1; i > 0; i-- {
		if rank >= apps[i].First {
			return apps[i]
		}
	}
	return apps[0]
}
