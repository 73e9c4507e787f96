package job

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestPlaceChild(t *testing.T) {
	rooms := func() []Room {
		return []Room{{Name: "n1", Slots: 2, Used: 2}, {Name: "n2", Slots: 2, Used: 1}, {Name: "n3", Slots: 3}}
	}
	cases := []struct {
		np      int
		by      MapBy
		over    bool
		want    []int
		wantErr string
	}{
		{np: 4, by: MapBySlot, want: []int{1, 2, 2, 2}},
		{np: 3, by: MapByNode, want: []int{1, 2, 2}},
		{np: 4, by: MapByNode, want: []int{1, 2, 2, 2}},
		{np: 5, wantErr: "a child job of 5 ranks, but only 4 slots free (n1: 0, n2: 1, n3: 3); use --oversubscribe"},
		{np: 6, over: true, want: []int{1, 2, 2, 2, 0, 1}},
		{np: 0, wantErr: "want from 1"},
	}
	for _, c := range cases {
		r := rooms()
		got, err := PlaceChild(r, c.np, c.by, c.over)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("np %d: error %v, want %q", c.np, err, c.wantErr)
			}
			if slots := strings.Contains(c.wantErr, "free"); errors.Is(err, ErrNoSlots) != slots {
				t.Errorf("np %d: errors.Is(%v, ErrNoSlots) is %v", c.np, err, !slots)
			}
			continue
		}
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("np %d by %v oversubscribe %v: %v, %v; want %v", c.np, c.by, c.over, got, err, c.want)
		}
		if used := r[0].Used + r[1].Used + r[2].Used; used != 3+c.np {
			t.Errorf("np %d: %d slots used after, want %d", c.np, used, 3+c.np)
		}
	}
}
