// Package hostrange reads and writes Slurm-style host ranges, in which
// "node[001-004],login1" is five host names. mpirun reads them in -H,
// hostfiles and batch allocations (package job), and every daemon receives
// the job's host list written as ranges (List). It is pure, as the
// daemons' protocol machine that imports it must be.
package hostrange

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// MaxHosts bounds what one host expression may expand to, and the
// distinct hosts of one list, hostfile or allocation, so that a typo such
// as node[0-99999999] is an error rather than gigabytes. It is above the
// node count of any machine built so far.
const MaxHosts = 1 << 18

// maxDigits keeps range bounds far from integer overflow.
const maxDigits = 9

// Split splits a comma-separated list at the commas outside brackets, so
// that "n[1,3],m" is two entries, as Slurm reads it.
func Split(s string) ([]string, error) {
	parts := make([]string, 0, strings.Count(s, ",")+1)
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			if depth++; depth > 1 {
				return nil, fmt.Errorf("%q: brackets inside brackets", s)
			}
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("%q: ']' without '['", s)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: '[' without ']'", s)
	}
	return append(parts, s[start:]), nil
}

// Expand expands one Slurm-style host expression: "node[001-003]" is
// node001, node002, node003 (the width of the first bound is kept),
// "n[1,4-5]" is n1, n4, n5, and "rack[1-2]-n[1-2]" is rack1-n1, rack1-n2,
// rack2-n1, rack2-n2: the leftmost range varies slowest. A name without
// brackets is itself. The names are not checked.
func Expand(expr string) ([]string, error) {
	names := []string{""}
	rest := expr
	for rest != "" {
		open := strings.IndexByte(rest, '[')
		if open < 0 {
			return appendAll(names, []string{rest}), nil
		}
		closing := strings.IndexByte(rest, ']')
		if closing < 0 {
			return nil, fmt.Errorf("%q: '[' without ']'", expr)
		}
		if closing < open {
			return nil, fmt.Errorf("%q: ']' without '['", expr)
		}
		values, err := expandBrackets(rest[open+1 : closing])
		if err != nil {
			return nil, fmt.Errorf("%q: %w", expr, err)
		}
		if len(names)*len(values) > MaxHosts {
			return nil, fmt.Errorf("%q expands to more than %d hosts", expr, MaxHosts)
		}
		names = appendAll(appendAll(names, []string{rest[:open]}), values)
		rest = rest[closing+1:]
	}
	return names, nil
}

// appendAll is the product of prefixes and suffixes, prefixes varying
// slowest. The names share one string's memory: every daemon expands the
// job's host list, 100,000 names at 100,000 nodes.
func appendAll(prefixes, suffixes []string) []string {
	size := 0
	for _, p := range prefixes {
		size += len(p) * len(suffixes)
	}
	for _, s := range suffixes {
		size += len(s) * len(prefixes)
	}
	var b strings.Builder
	b.Grow(size)
	out := make([]string, 0, len(prefixes)*len(suffixes))
	for _, p := range prefixes {
		for _, s := range suffixes {
			b.WriteString(p)
			b.WriteString(s)
			all := b.String() // the names so far, not copied
			out = append(out, all[len(all)-len(p)-len(s):])
		}
	}
	return out
}

// expandBrackets expands what is between '[' and ']': a comma-separated
// list of numbers and ranges lo-hi.
func expandBrackets(list string) ([]string, error) {
	if list == "" {
		return nil, errors.New("empty brackets")
	}
	var out []string
	for _, item := range strings.Split(list, ",") {
		var err error
		if out, err = appendRange(out, item, MaxHosts-len(out)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// appendRange appends to out the values of "7", "07" or "01-12",
// zero-padded to the width of the lower bound, refusing more than limit
// values.
func appendRange(out []string, item string, limit int) ([]string, error) {
	lo, hi, isRange := strings.Cut(item, "-")
	if !isRange {
		hi = lo
	}
	from, err := rangeBound(lo, item)
	if err != nil {
		return nil, err
	}
	to, err := rangeBound(hi, item)
	if err != nil {
		return nil, err
	}
	switch {
	case to < from:
		return nil, fmt.Errorf("range %q runs backwards", item)
	case to-from >= limit:
		return nil, fmt.Errorf("range %q expands to more than %d hosts", item, MaxHosts)
	}
	// The values are counted up in one string they share, as in appendAll.
	var b strings.Builder
	b.Grow((to - from + 1) * max(len(lo), len(hi)))
	out, digits := slices.Grow(out, to-from+1), []byte(lo)
	for range to - from + 1 {
		b.Write(digits)
		all := b.String()
		out = append(out, all[len(all)-len(digits):])
		digits = increment(digits)
	}
	return out, nil
}

// increment adds one to a decimal number, keeping its width: 0099 is
// followed by 0100, 99 by 100.
func increment(digits []byte) []byte {
	for i := len(digits) - 1; i >= 0; i-- {
		if digits[i] < '9' {
			digits[i]++
			return digits
		}
		digits[i] = '0'
	}
	return append([]byte{'1'}, digits...)
}

// rangeBound parses one bound of a bracket range: plain decimal digits.
func rangeBound(s, item string) (int, error) {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q in brackets: want numbers or ranges such as 01-16", item)
	}
	if len(s) > maxDigits {
		return 0, fmt.Errorf("%q in brackets: more than %d digits", item, maxDigits)
	}
	return strconv.Atoi(s)
}
