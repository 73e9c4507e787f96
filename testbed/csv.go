package testbed

import (
	"encoding/csv"
	"os"
)

// WriteCSV writes records (the header first) to path: the simulator's
// sweeps and the lab's benchmarks share this form.
func WriteCSV(path string, records [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.WriteAll(records)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
