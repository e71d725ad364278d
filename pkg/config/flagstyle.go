package config

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"
)

// SnakeCase is the one flag style (LightLLM's snake_case names): a
// kebab-case spelling (--max-total-token-num, vLLM's style) is the same
// flag. Every command and role binary installs it.
func SnakeCase(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "-", "_"))
}

// SuggestFlag adds "did you mean --x?" to pflag's unknown-flag error when a
// registered flag is a close spelling (edit distance at most a quarter of
// the name, and at least 3; or one contains the other); other errors are
// returned unchanged.
func SuggestFlag(fs *pflag.FlagSet, err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return err
	}
	name = string(SnakeCase(fs, name))
	best, bestD := "", max(3, len(name)/4)+1
	fs.VisitAll(func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if strings.Contains(f.Name, name) || strings.Contains(name, f.Name) {
			d = min(d, 2)
		}
		if d < bestD {
			best, bestD = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w (did you mean --%s?)", err, best)
}

// editDistance is the Levenshtein distance of a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
