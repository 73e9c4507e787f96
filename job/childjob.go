package job

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNoSlots is what PlaceChild's error is when the nodes have too few
// free slots (errors.Is): ranks that end may free them.
var ErrNoSlots = errors.New("too few free slots")

// slotsError words ErrNoSlots for the user.
type slotsError struct{ msg string }

func (e slotsError) Error() string      { return e.msg }
func (slotsError) Is(target error) bool { return target == ErrNoSlots }

// Room is a node's place for a child job (MPI_Comm_spawn): its slots,
// and how many of them the running jobs' ranks take.
type Room struct {
	Name        string
	Slots, Used int
}

// PlaceChild places np more ranks on rooms, Open MPI's way for a job
// started while others run: into the free slots first (by slot: filling
// each node in turn; by node: one per node round robin), and more ranks
// than free slots only with oversubscribe, round robin over every node.
// It returns the index in rooms of each rank, and adds them to Used.
func PlaceChild(rooms []Room, np int, by MapBy, oversubscribe bool) ([]int, error) {
	if np <= 0 || np > MaxRanks {
		return nil, fmt.Errorf("a child job of %d ranks: want from 1 to %d", np, MaxRanks)
	}
	if len(rooms) == 0 {
		return nil, fmt.Errorf("a child job of %d ranks, but no node to place it on", np)
	}
	free := 0
	for _, r := range rooms {
		free += max(r.Slots-r.Used, 0)
	}
	if np > free && !oversubscribe {
		return nil, slotsError{fmt.Sprintf("a child job of %s, but only %s free (%s); use --oversubscribe to allow it",
			ranks(np), Slots(free), freeSlots(rooms))}
	}
	out := make([]int, 0, np)
	hasFree := func(i int) bool { return rooms[i].Used < rooms[i].Slots }
	for len(out) < np && free > 0 {
		for i := range rooms {
			for hasFree(i) && len(out) < np {
				out = append(out, i)
				rooms[i].Used++
				free--
				if by == MapByNode {
					break
				}
			}
		}
	}
	for i := 0; len(out) < np; i = (i + 1) % len(rooms) { // oversubscribed
		out = append(out, i)
		rooms[i].Used++
	}
	return out, nil
}

// ranks says "1 rank" or "n ranks".
func ranks(n int) string {
	if n == 1 {
		return "1 rank"
	}
	return fmt.Sprintf("%d ranks", n)
}

// freeSlots words each room's free slots: "node1: 0, node2: 2".
func freeSlots(rooms []Room) string {
	parts := make([]string, len(rooms))
	for i, r := range rooms {
		parts[i] = fmt.Sprintf("%s: %d", r.Name, max(r.Slots-r.Used, 0))
	}
	return strings.Join(parts, ", ")
}
