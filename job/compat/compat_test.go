package compat

import (
	"slices"
	"testing"

	"prsh/internal/purity"
)

func TestPure(t *testing.T) { purity.Check(t, "prsh/job/compat") }

func TestMCAEnv(t *testing.T) {
	cases := []struct {
		name      string
		gmca, mca []string
		env       []string
		warnings  []string
		err       string
	}{
		{"none", nil, nil, nil, nil, ""},
		{"--mca after -gmca", []string{"ess=singleton"}, []string{"ess=env", "btl=tcp,self"},
			[]string{"OMPI_MCA_ess=singleton", "OMPI_MCA_ess=env", "OMPI_MCA_btl=tcp,self"}, nil, ""},
		{"empty value", nil, []string{"btl="}, []string{"OMPI_MCA_btl="}, nil, ""},
		{"launcher's, with its flag", nil, []string{"plm_rsh_agent=rsh"}, []string{"OMPI_MCA_plm_rsh_agent=rsh"},
			[]string{"--mca plm_rsh_agent is a parameter of Open MPI's own launcher, which prsh replaces: use --launch-agent 'CMD %h'"}, ""},
		{"launcher's by prefix", []string{"ras_base_verbose=1"}, nil, []string{"OMPI_MCA_ras_base_verbose=1"},
			[]string{"-gmca ras_base_verbose is a parameter of Open MPI's own launcher, which prsh replaces: prsh does not read it (the ranks still get it)"}, ""},
		{"bad key after a warning", nil, []string{"routed=radix", "a-b=1"}, nil,
			[]string{"--mca routed is a parameter of Open MPI's own launcher, which prsh replaces: use --routed"},
			`--mca "a-b" "1": want --mca KEY VALUE, KEY of letters, digits and '_'`},
		{"no key", []string{"=1"}, nil, nil, nil, `-gmca "" "1": want -gmca KEY VALUE, KEY of letters, digits and '_'`},
	}
	for _, tc := range cases {
		env, warnings, err := MCAEnv(tc.gmca, tc.mca)
		if !slices.Equal(env, tc.env) || !slices.Equal(warnings, tc.warnings) || errText(err) != tc.err {
			t.Errorf("%s: got %q, %q, %v; want %q, %q, %q", tc.name, env, warnings, err, tc.env, tc.warnings, tc.err)
		}
	}
}

func TestLauncherParam(t *testing.T) {
	for key, want := range map[string]string{
		"btl":                       "",
		"pml":                       "",
		"plm_rsh_args":              "use --launch-agent 'ssh ARGS %h', or --ssh-config",
		"orte_tag_output":           "use --tag-output",
		"odls_base_verbose":         "prsh does not read it (the ranks still get it)",
		"oob_tcp_static_ipv4_ports": "use --port-range",
	} {
		if got := LauncherParam(key); got != want {
			t.Errorf("LauncherParam(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestOlderSpelling(t *testing.T) {
	cases := []struct {
		flag, value string
		set         bool
		olders      map[string]string
		on          []string
		want, err   string
	}{
		{"map-by", "slot", false, OlderMapBy, nil, "slot", ""},
		{"map-by", "slot", false, OlderMapBy, []string{"bynode"}, "node", ""},
		{"map-by", "node:PE=2", true, OlderMapBy, []string{"bynode"}, "node:PE=2", ""},
		{"map-by", "slot", true, OlderMapBy, []string{"bynode"}, "", "--bynode and --map-by slot contradict each other"},
		{"map-by", "slot", false, OlderMapBy, []string{"bynode", "byslot"}, "", "--byslot and --bynode contradict each other"},
		{"bind-to", "core:overload-allowed", true, OlderBindTo, []string{"bind-to-core"}, "core:overload-allowed", ""},
		{"bind-to", "", false, OlderBindTo, []string{"bind-to-socket"}, "socket", ""},
		{"bind-to", "CORE", true, OlderBindTo, []string{"bind-to-core"}, "CORE", ""},
		{"bind-to", "numa", true, OlderBindTo, []string{"bind-to-socket"}, "", "--bind-to-socket and --bind-to numa contradict each other"},
	}
	for _, tc := range cases {
		on := map[string]bool{}
		for _, name := range tc.on {
			on[name] = true
		}
		got, err := OlderSpelling(tc.flag, tc.value, tc.set, tc.olders, on)
		if got != tc.want || errText(err) != tc.err {
			t.Errorf("--%s %q (set %v) with %v: got %q, %v; want %q, %q", tc.flag, tc.value, tc.set, tc.on, got, err, tc.want, tc.err)
		}
	}
}

func TestForwardPolicy(t *testing.T) {
	for _, tc := range []struct {
		all, none bool
		want      EnvPolicy
		err       string
	}{
		{false, false, ForwardOMPI, ""},
		{true, false, ForwardAll, ""},
		{false, true, ForwardNone, ""},
		{true, true, 0, "-genvall and -genvnone contradict each other"},
	} {
		got, err := ForwardPolicy(tc.all, tc.none)
		if got != tc.want || errText(err) != tc.err {
			t.Errorf("ForwardPolicy(%v, %v) = %v, %v; want %v, %q", tc.all, tc.none, got, err, tc.want, tc.err)
		}
	}
}

func TestSettings(t *testing.T) {
	for _, tc := range []struct {
		flag  string
		pairs []string
		err   string
	}{
		{"genv", []string{"A=1", "B=x, y", "C="}, ""},
		{"genv", []string{"A=1", "=2"}, `-genv "=2": want -genv VAR value`},
		{"env", []string{"NOVALUE"}, `-env "NOVALUE": want -env VAR value`},
	} {
		got, err := Settings(tc.flag, tc.pairs)
		if errText(err) != tc.err || err == nil && !slices.Equal(got, tc.pairs) {
			t.Errorf("Settings(%s, %q) = %q, %v; want %q", tc.flag, tc.pairs, got, err, tc.err)
		}
	}
}

func TestListedNames(t *testing.T) {
	got := ListedNames([]string{"A,B", "C"})
	if want := []string{"A", "B", "C"}; !slices.Equal(got, want) {
		t.Errorf("ListedNames = %q, want %q", got, want)
	}
}

func TestFirstProgramOnly(t *testing.T) {
	for _, tc := range []struct {
		given    []string
		programs int
		err      string
	}{
		{[]string{"envall", "envlist"}, 1, ""},
		{nil, 3, ""},
		{[]string{"envlist", "envnone"}, 2, "-envnone before the first of several programs: Hydra applies it to that program alone, which prsh cannot; give -genvnone for every program"},
		{[]string{"envlist"}, 2, "-envlist before the first of several programs: Hydra applies it to that program alone, which prsh cannot; give -genvlist for every program"},
	} {
		if err := FirstProgramOnly(tc.given, tc.programs); errText(err) != tc.err {
			t.Errorf("FirstProgramOnly(%q, %d) = %v, want %q", tc.given, tc.programs, err, tc.err)
		}
	}
}

func TestDefaultHostfile(t *testing.T) {
	for value, want := range map[string]string{"": "", "none": "", "/etc/hosts.ompi": "/etc/hosts.ompi"} {
		getenv := func(name string) string {
			if name == DefaultHostfileVar {
				return value
			}
			return ""
		}
		if got := DefaultHostfile(getenv); got != want {
			t.Errorf("DefaultHostfile with %q = %q, want %q", value, got, want)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
