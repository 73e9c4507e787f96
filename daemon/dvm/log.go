package dvm

import (
	"os"
	"path/filepath"
	"strings"
)

// LogPath is where a daemonized DVM's lines are kept (prte --daemonize):
// beside its socket's directory, named after it,
// $XDG_RUNTIME_DIR/prsh-dvm-XXXX.log for unix:$XDG_RUNTIME_DIR/prsh-dvm-XXXX/dvm.sock.
// Unlike the directory, it outlives the DVM, so that a DVM that failed
// in the background leaves its lines to read; a clean --dvm-stop removes
// it.
func LogPath(uri string) string {
	return filepath.Dir(strings.TrimPrefix(uri, scheme)) + ".log"
}

// NewStartLog makes the file a daemonized DVM's stderr goes to as it
// starts (mode 0600), in the directory its socket's will be in, so that
// it can be renamed to LogPath once the DVM is up.
func NewStartLog() (*os.File, error) {
	return os.CreateTemp(runtimeDir(), "prsh-dvm-start-*.log")
}

// logNote names the DVM's log for a line about it, if it has one.
func logNote(uri string) string {
	if _, err := os.Stat(LogPath(uri)); err != nil {
		return ""
	}
	return "; its lines are in " + LogPath(uri)
}
