//go:build !pmix

package pmix

// ChildJobReply is absent from this build.
type ChildJobReply struct{}

// Send does nothing in this build.
func (*ChildJobReply) Send(string, error) {}
