package errmgr

import (
	"testing"

	"prsh/internal/purity"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/errmgr") }

func TestPolicyFirstFailureWins(t *testing.T) {
	var p Policy
	if !p.Fail(3) || p.Fail(9) || p.Finish() {
		t.Fatal("only the first failure may end the job")
	}
	if p.Status() != 3 {
		t.Fatalf("status %d, want 3", p.Status())
	}
	var ok Policy
	if !ok.Finish() || ok.Fail(4) || ok.Status() != 0 {
		t.Fatalf("a job that finished stays finished with 0, got %d", ok.Status())
	}
}
