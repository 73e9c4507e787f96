package dvm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// scheme starts every DVM URI: the rest is the socket's path.
const scheme = "unix:"

// Listener is the DVM's socket: in a directory only its user may enter,
// and each connection's peer checked to be that user.
type Listener struct {
	ln  *net.UnixListener
	dir string
}

// Listen makes the DVM's socket in a new 0700 directory under
// $XDG_RUNTIME_DIR, else $TMPDIR, else /tmp.
func Listen() (*Listener, error) {
	dir, err := os.MkdirTemp(runtimeDir(), "prsh-dvm-")
	if err != nil {
		return nil, fmt.Errorf("cannot make the DVM's directory: %w", err)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "dvm.sock"), Net: "unix"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("cannot listen for the DVM's clients: %w", err)
	}
	return &Listener{ln: ln, dir: dir}, nil
}

func runtimeDir() string {
	for _, v := range []string{"XDG_RUNTIME_DIR", "TMPDIR"} {
		if d := os.Getenv(v); d != "" {
			return d
		}
	}
	return "/tmp"
}

// URI says how clients reach the DVM.
func (l *Listener) URI() string { return scheme + l.ln.Addr().String() }

// Accept waits for the next client of this user; a connection from any
// other uid is closed unread.
func (l *Listener) Accept() (*Conn, error) {
	for {
		c, err := l.ln.AcceptUnix()
		if err != nil {
			return nil, err
		}
		if err := sameUser(c); err != nil {
			c.Close()
			continue
		}
		return NewConn(c), nil
	}
}

// sameUser checks the peer's uid (SO_PEERCRED) against this process's.
func sameUser(c *net.UnixConn) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return credErr
	}
	return checkUID(int(cred.Uid), os.Getuid())
}

func checkUID(peer, self int) error {
	if peer != self {
		return fmt.Errorf("a client of uid %d, not the DVM's user (uid %d)", peer, self)
	}
	return nil
}

// Close stops taking clients and removes the socket's directory.
func (l *Listener) Close() error {
	err := l.ln.Close()
	os.RemoveAll(l.dir)
	return err
}

// WriteURIFile writes uri into path, mode 0600, whole: a reader never
// sees half of it.
func WriteURIFile(path, uri string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(uri+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// Resolve turns what the user gave (--dvm, --dvm-stop) into a URI: a URI
// as it is, else the file that holds one.
func Resolve(arg string) (string, error) {
	if strings.HasPrefix(arg, scheme) {
		return arg, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return "", fmt.Errorf("%s is neither a DVM URI (%s…) nor a file holding one: %w", arg, scheme, err)
	}
	uri := strings.TrimSpace(string(b))
	if !strings.HasPrefix(uri, scheme) {
		return "", fmt.Errorf("%s holds no DVM URI (%s…)", arg, scheme)
	}
	return uri, nil
}

// NamesDVM says whether word is a URI or a file that holds one: what
// Resolve takes, as against a program. It reads only the file's start.
func NamesDVM(word string) bool {
	if strings.HasPrefix(word, scheme) {
		return true
	}
	f, err := os.Open(word)
	if err != nil {
		return false
	}
	defer f.Close()
	start := make([]byte, len(scheme))
	_, err = io.ReadFull(f, start)
	return err == nil && string(start) == scheme
}

// Dial reaches the DVM at uri and reads its Hello.
func Dial(uri string) (*Conn, Hello, error) {
	c, err := net.Dial("unix", strings.TrimPrefix(uri, scheme))
	if err != nil {
		return nil, Hello{}, fmt.Errorf("%s: no DVM answers there (it was stopped, or started on another node): %w%s", uri, errors.Unwrap(err), logNote(uri))
	}
	conn := NewConn(c)
	var h Hello
	if err := conn.ReadJSON(KindHello, &h); err != nil {
		c.Close()
		return nil, Hello{}, fmt.Errorf("%s: the DVM did not say hello: %w", uri, err)
	}
	if h.Version != Version {
		c.Close()
		return nil, Hello{}, fmt.Errorf("%s: the DVM speaks version %d of the client's wire, this mpirun %d: use the same prsh", uri, h.Version, Version)
	}
	return conn, h, nil
}
