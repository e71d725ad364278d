package metrics

import (
	"math"
	"strings"
	"testing"
)

func TestBatchRoundTrip(t *testing.T) {
	in := []Event{
		{KindCounter, RequestCount, "", 1},
		{KindHistogram, RequestFirstTokenDuration, "", 0.125},
		{KindGauge, KVUsage, "", math.SmallestNonzeroFloat64},
		{KindCounter, BatchInferenceCount, MethodDecode, 3},
	}
	msg, err := AppendBatch(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeBatch(nil, msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("got %d events, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Errorf("event %d: got %+v, want %+v", i, out[i], in[i])
		}
	}
}

func TestDecodeBatchRejects(t *testing.T) {
	good, err := AppendBatch(nil, []Event{{KindCounter, RequestCount, "", 1}, {KindGauge, QueueSize, "", 2}})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		msg  []byte
		want string
	}{
		"empty":          {nil, "not a metric batch"},
		"bad magic":      {append([]byte{'X'}, good[1:]...), "not a metric batch"},
		"bad version":    {append([]byte{'M', 9}, good[2:]...), "version 9"},
		"truncated":      {good[:len(good)-3], "truncated"},
		"trailing bytes": {append(append([]byte{}, good...), 0), "trailing"},
		"count too big":  {[]byte{'M', 1, 0xff, 0xff}, "more than"},
		"header only":    {[]byte{'M', 1, 1, 0}, "truncated"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			prev := []Event{{KindGauge, "keep", "", 1}}
			out, err := DecodeBatch(prev, tc.msg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
			if len(out) != 1 || out[0].Name != "keep" {
				t.Fatalf("a bad message must append nothing, got %+v", out)
			}
		})
	}
}

func TestAppendBatchRejects(t *testing.T) {
	tests := map[string][]Event{
		"empty name": {{KindCounter, "", "", 1}},
		"long name":  {{KindCounter, strings.Repeat("a", 256), "", 1}},
		"long label": {{KindCounter, "a", strings.Repeat("b", 256), 1}},
		"too many":   make([]Event, MaxBatch+1),
	}
	for name, ev := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := AppendBatch(nil, ev); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func FuzzDecodeBatch(f *testing.F) {
	good, _ := AppendBatch(nil, []Event{{KindCounter, RequestCount, "", 1}, {KindHistogram, CacheRatio, "", 0.5}})
	f.Add(good)
	f.Add([]byte{'M', 1, 3, 0, 1, 2})
	f.Fuzz(func(t *testing.T, msg []byte) {
		ev, err := DecodeBatch(nil, msg)
		if err != nil {
			return
		}
		again, err := AppendBatch(nil, ev)
		if err != nil {
			t.Fatalf("decoded events do not re-encode: %v", err)
		}
		if string(again) != string(msg) {
			t.Fatalf("re-encoding differs")
		}
	})
}
