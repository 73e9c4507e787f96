package agent

import (
	"context"
	"sync"
)

// A spawner should open its sessions in the order the spawn tree lists its
// children: the first have subtrees to spawn in their turn, and each
// session opened before theirs delays all of their subtree (the paper's
// tree fills its levels in order). Each child's Start runs on a goroutine
// of its own, which alone would leave that order to the scheduler: at δ 32
// on 256 nodes the seven children with subtrees drew the spawner's slots
// 3rd to 32nd. A turn makes the start of each session (an agent's fork, a
// native session's slot) wait for the start of the one asked for before.

type turnKey struct{}

type turn struct {
	prev <-chan struct{} // closed when the previous session has started; nil for the first
	mine chan struct{}
	once sync.Once
}

// InTurn returns ctx carrying the turn after prev (nil: the first), and
// the channel that closes once this turn's session has started, to pass
// as prev to the next. Call PassTurn when Start returns.
func InTurn(ctx context.Context, prev <-chan struct{}) (context.Context, <-chan struct{}) {
	t := &turn{prev: prev, mine: make(chan struct{})}
	return context.WithValue(ctx, turnKey{}, t), t.mine
}

// takeTurn waits until the previous session has started, or ctx ends.
func takeTurn(ctx context.Context) error {
	t, _ := ctx.Value(turnKey{}).(*turn)
	if t == nil || t.prev == nil {
		return nil
	}
	select {
	case <-t.prev:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// PassTurn lets the next session start: an agent calls it once its own
// session has started, and the caller of Start when Start returns,
// whatever happened. Calls after the first do nothing.
func PassTurn(ctx context.Context) {
	if t, _ := ctx.Value(turnKey{}).(*turn); t != nil {
		t.once.Do(func() { close(t.mine) })
	}
}
