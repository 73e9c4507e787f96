package compat

import (
	"fmt"
	"strings"
)

// MCAEnv turns each -gmca and --mca KEY=VALUE (gmca, mca) into
// OMPI_MCA_KEY=VALUE for the ranks, as Open MPI's mpirun passes its MCA
// parameters to its ranks (--mca after -gmca, so that it wins). A
// parameter of Open MPI's own launcher, which prsh replaces, is passed
// too, with a warning that says what to use instead; the warnings are
// returned even with an error, for the parameters before it.
func MCAEnv(gmca, mca []string) (env, warnings []string, err error) {
	for _, given := range []struct {
		flag  string
		pairs []string
	}{{"-gmca", gmca}, {"--mca", mca}} {
		for _, kv := range given.pairs {
			key, value, _ := strings.Cut(kv, "=")
			v, err := MCAVar(given.flag, key, value)
			if err != nil {
				return nil, warnings, err // the warnings so far still stand
			}
			if hint := LauncherParam(key); hint != "" {
				warnings = append(warnings, fmt.Sprintf("%s %s is a parameter of Open MPI's own launcher, which prsh replaces: %s", given.flag, key, hint))
			}
			env = append(env, v)
		}
	}
	return env, warnings, nil
}

// MCAVar is the variable through which Open MPI reads parameter key,
// given with flag.
func MCAVar(flag, key, value string) (string, error) {
	if key == "" || strings.TrimFunc(key, isParamChar) != "" {
		return "", fmt.Errorf("%s %q %q: want %s KEY VALUE, KEY of letters, digits and '_'", flag, key, value, flag)
	}
	return "OMPI_MCA_" + key + "=" + value, nil
}

func isParamChar(r rune) bool {
	return r == '_' || '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
}

// launcherHints are the parameters of Open MPI's launcher that users
// set most, and the flag of prsh's that does their work.
var launcherHints = map[string]string{
	"plm_rsh_agent":              "use --launch-agent 'CMD %h'",
	"plm_rsh_args":               "use --launch-agent 'ssh ARGS %h', or --ssh-config",
	"plm_rsh_num_concurrent":     "use --ssh-max-sessions",
	"orte_launch_agent":          "use --orted PATH",
	"rmaps_base_oversubscribe":   "use --oversubscribe",
	"rmaps_base_mapping_policy":  "use --map-by",
	"hwloc_base_binding_policy":  "use --bind-to",
	"routed":                     "use --routed",
	"routed_radix":               "use --routed-radix",
	"orte_tag_output":            "use --tag-output",
	"orte_timestamp_output":      "use --timestamp-output",
	"oob_tcp_dynamic_ipv4_ports": "use --port-range",
	"oob_tcp_static_ipv4_ports":  "use --port-range",
}

// LauncherParam says what to do instead of setting key, a parameter of
// Open MPI's launcher; "" for any other parameter.
func LauncherParam(key string) string {
	if hint, ok := launcherHints[key]; ok {
		return hint
	}
	for _, prefix := range []string{"plm_", "ras_", "rmaps_", "odls_", "orte_"} {
		if strings.HasPrefix(key, prefix) {
			return "prsh does not read it (the ranks still get it)"
		}
	}
	return ""
}
