package guard

import (
	"strconv"
	"testing"
)

// TestRankIsTheOOMKillersFirstChoice: the rank runs with a higher
// oom_score_adj than its guard, which is back at the one it was given.
func TestRankIsTheOOMKillersFirstChoice(t *testing.T) {
	own, err := readOOMScoreAdj(ownOOMScoreAdj)
	if err != nil {
		t.Skipf("no oom_score_adj here: %v", err)
	}
	if own == oomScoreAdjMax {
		t.Skip("this test runs at the largest oom_score_adj: the rank cannot be raised above it")
	}
	g := startGuard(t)
	rank := startRank(t, g, 0, `exec sleep 60`, nil, 0).Pid // answered once the guard has lowered its own score
	if got, err := readOOMScoreAdj(procFile(rank)); got != min(own+rankOOMScoreRaise, oomScoreAdjMax) || err != nil {
		t.Errorf("the rank's oom_score_adj is %d (%v), want %d raised by %d", got, err, own, rankOOMScoreRaise)
	}
	if got, err := readOOMScoreAdj(procFile(g.Pid())); got != own || err != nil {
		t.Errorf("the guard's oom_score_adj is %d (%v), want %d as it was given", got, err, own)
	}
}

func procFile(pid int) string {
	return "/proc/" + strconv.Itoa(pid) + "/oom_score_adj"
}
