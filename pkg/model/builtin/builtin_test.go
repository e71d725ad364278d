package builtin

import (
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	tests := []struct {
		spec    string
		wantErr string
	}{
		{"builtin:tiny-random", ""},
		{"builtin:", "unknown builtin model"},
		{"builtin:huge-random", "unknown builtin model"},
		{"builtin:Tiny-Random", "unknown builtin model"},
		{"tiny-random", "not a builtin model"},
		{"/models/builtin:tiny-random", "not a builtin model"},
	}
	for _, tc := range tests {
		s, err := Lookup(tc.spec)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("Lookup(%q): %v", tc.spec, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Lookup(%q): err %v, want %q", tc.spec, err, tc.wantErr)
		case tc.wantErr == "" && (s.Name != "tiny-random" || s.Hidden%s.Heads != 0 || s.Heads%s.KVHeads != 0 || s.Vocab < 260):
			t.Errorf("Lookup(%q) = %+v: inconsistent geometry", tc.spec, s)
		}
	}
}

func TestNamesAreSpecs(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatal("no builtin models")
	}
	for _, n := range names {
		if !IsSpec(n) {
			t.Errorf("%q is not recognised as a builtin spec", n)
		}
		if _, err := Lookup(n); err != nil {
			t.Errorf("Lookup(%q): %v", n, err)
		}
	}
	if IsSpec("org/name") || IsSpec("./builtin:x") {
		t.Error("paths and Hub ids must not be builtin specs")
	}
}
