package timeouts

import (
	"strings"
	"testing"
	"time"

	"prsh/internal/purity"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/internal/timeouts") }

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
	if s := Default().String(); s != "" {
		t.Fatalf("the defaults print as %q, want nothing", s)
	}
}

func TestParse(t *testing.T) {
	got, err := Parse("silence=3s, guard-stopped=4.5s,drain=1m")
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.SilenceMS, want.GuardStoppedMS, want.DrainMS = 3000, 4500, 60_000
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	again, err := Parse(got.String())
	if err != nil || again != got {
		t.Fatalf("Parse(%q) = %+v, %v: does not read back", got.String(), again, err)
	}
}

func TestParseErrors(t *testing.T) {
	for list, want := range map[string]string{
		"silence":                      "want NAME=DURATION",
		"quiet=3s":                     "want NAME=DURATION, NAME one of keep-alive, silence",
		"silence=3":                    "has no unit",
		"silence=fast":                 "is not a duration",
		"drain=0s":                     "drain must be positive, not 0s",
		"silence=40s":                  "guard-stopped (30s) must be longer than silence (40s)",
		"keep-alive=20s":               "keep-alive (20s) must be shorter than silence (20s)",
		"silence=5s,guard-stopped=1s":  "guard-stopped (1s) must be longer than silence (5s)",
		"silence=2s,keep-alive=2500ms": "keep-alive (2.5s) must be shorter than silence (2s)",
	} {
		if _, err := Parse(list); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", list, err, want)
		}
	}
}

// Format and ParseMS agree with time.Duration for every spelling a user
// may write.
func TestDurationsAsGoWritesThem(t *testing.T) {
	for _, ms := range []int64{0, 1, 999, 1000, 1500, 1001, 59_999, 60_000, 61_500, 3600_000, 3661_001, -2500} {
		want := (time.Duration(ms) * time.Millisecond).String()
		if got := Format(ms); got != want {
			t.Errorf("Format(%d) = %q, want %q", ms, got, want)
		}
		if ms < 0 {
			continue
		}
		if back, err := ParseMS(want); err != nil || back != ms {
			t.Errorf("ParseMS(%q) = %d, %v, want %d", want, back, err, ms)
		}
	}
	for _, s := range []string{"", "s", "1.2.3s", "5x", "-1s"} {
		if ms, err := ParseMS(s); err == nil {
			t.Errorf("ParseMS(%q) = %d, want an error", s, ms)
		}
	}
}

// TestDrainOutlastsGuardsWait: mpirun's drain timer outlasts a daemon's
// wait for a stopped child's guards, whatever the bounds.
func TestDrainOutlastsGuardsWait(t *testing.T) {
	for list, want := range map[string]int64{
		"":                     20_000, // the guards wait 15 s
		"silence=8s":           29_000, // 30 - 8 + 2×2 + 1, and a keep-alive
		"guard-stopped=25s":    20_000,
		"silence=10s,drain=1m": 60_000,
	} {
		b, err := Parse(list)
		if err != nil {
			t.Fatal(err)
		}
		if got := b.DrainWaitMS(); got != want || got <= b.GuardsWaitMS() {
			t.Errorf("%q: drain wait %d ms, want %d, longer than the guards wait (%d ms)", list, got, want, b.GuardsWaitMS())
		}
	}
}
