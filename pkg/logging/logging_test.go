package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestJSONLinesAreTagged(t *testing.T) {
	t.Setenv(EnvFormat, "")
	var buf bytes.Buffer
	log, err := New(Options{Role: "router", Instance: "8000", Level: "debug", Out: &buf})
	if err != nil {
		t.Fatal(err)
	}
	log.Debug().Int("n", 3).Msg("hello")
	log.Trace().Msg("hidden at debug")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
	}
	if m["role"] != "router" || m["instance"] != "8000" || m["pid"] != float64(os.Getpid()) || m["message"] != "hello" || m["level"] != "debug" {
		t.Fatalf("fields: %v", m)
	}
	ts, err := time.Parse(time.RFC3339Nano, m["time"].(string))
	if err != nil || time.Since(ts) > time.Minute {
		t.Fatalf("time %v: %v", m["time"], err)
	}
}

func TestFormatsAndLevels(t *testing.T) {
	tests := map[string]struct {
		format, env, level string
		wantJSON           bool
		wantErr            bool
	}{
		"auto on a buffer is json":  {format: "auto", wantJSON: true},
		"env asks for console":      {format: "auto", env: "console"},
		"explicit json beats env":   {format: "json", env: "console", wantJSON: true},
		"explicit console":          {format: "console"},
		"bad format":                {format: "xml", wantErr: true},
		"bad level":                 {format: "json", level: "loud", wantErr: true},
		"empty means auto and info": {wantJSON: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv(EnvFormat, tc.env)
			var buf bytes.Buffer
			log, err := New(Options{Role: "metric", Format: tc.format, Level: tc.level, Out: &buf})
			if tc.wantErr {
				if err == nil {
					t.Fatal("want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			log.Info().Msg("line")
			isJSON := json.Valid(bytes.TrimSpace(buf.Bytes()))
			if isJSON != tc.wantJSON || !strings.Contains(buf.String(), "line") {
				t.Fatalf("output %q (json=%v)", buf.String(), isJSON)
			}
		})
	}
	if IsTerminal(&bytes.Buffer{}) {
		t.Fatal("a buffer is not a terminal")
	}
}
