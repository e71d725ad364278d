package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Duration is a time.Duration that reads LightLLM-style plain seconds ("0.03",
// 60) as well as Go durations ("30ms", "1m"), and writes Go durations in JSON
// so config files stay readable.
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Set implements pflag.Value.
func (d *Duration) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Type implements pflag.Value.
func (d *Duration) Type() string { return "duration" }

// MarshalJSON writes "30s"-style strings.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON accepts a duration string or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var n float64
	if err := json.Unmarshal(b, &n); err == nil {
		*d = Duration(time.Duration(n * float64(time.Second)))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string like \"30s\" or a number of seconds, got %s", b)
	}
	return d.Set(s)
}

func parseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second)), nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want seconds like 0.5 or a Go duration like 500ms)", s)
	}
	return v, nil
}

// intList is the pflag.Value for []int flags such as --eos_id. Unlike pflag's
// IntSlice, Set replaces the list, so re-applying a flag's String() is exact.
type intList struct{ p *[]int }

func (l intList) String() string {
	if l.p == nil {
		return ""
	}
	parts := make([]string, len(*l.p))
	for i, v := range *l.p {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l intList) Set(s string) error {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("invalid integer %q in list %q", f, s)
		}
		out = append(out, v)
	}
	*l.p = out
	return nil
}

func (l intList) Type() string { return "ints" }

// strList is the pflag.Value for []string flags (comma separated). Like
// intList, Set replaces the list so that re-applying String() is exact.
type strList struct{ p *[]string }

func (l strList) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l strList) Set(s string) error {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	*l.p = out
	return nil
}

func (l strList) Type() string { return "strings" }
