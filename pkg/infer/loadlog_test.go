package infer

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/model"
)

func TestLoadLog(t *testing.T) {
	var buf bytes.Buffer
	l := newLoadLog(zerolog.New(&buf), 0) // every call is due
	for i := 1; i <= 3; i++ {
		l.progress(model.LoadProgress{Tensors: i, TotalTensors: 3, Bytes: int64(i) << 30, TotalBytes: 3 << 30})
	}
	l.progress(model.LoadProgress{Tensors: 3, TotalTensors: 3, Bytes: 3 << 30, TotalBytes: 3 << 30, CopiedBytes: 1 << 30, Done: true})
	l.summary(512<<20, 4096, 8, false)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 || l.lines != 3 {
		t.Fatalf("%d lines, want 3 progress + 1 summary:\n%s", len(lines), buf.String())
	}
	for _, want := range []string{`"tensors":2`, `"bytes":"2.0 GiB"`, `"bytes_total":"3.0 GiB"`, `"elapsed":"`, `loading weights: 67% (2/3 tensors)`} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("progress line %s: no %s", lines[1], want)
		}
	}
	for _, want := range []string{`"message":"model loaded"`, `"weights":"3.0 GiB"`, `"weights_copied":"1.0 GiB"`, `"kv_cache":"512.0 MiB"`,
		`"kv_tokens":4096`, `"threads":8`, `"took":"`} {
		if !strings.Contains(lines[3], want) {
			t.Errorf("summary %s: no %s", lines[3], want)
		}
	}
	quiet := newLoadLog(zerolog.New(&buf), time.Hour)
	quiet.progress(model.LoadProgress{Tensors: 1, TotalTensors: 3})
	if quiet.lines != 0 {
		t.Error("a progress line before the interval")
	}
}

func TestByteSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536 << 20: "1.5 GiB", 5 << 40: "5.0 TiB"} {
		if got := byteSize(n); got != want {
			t.Errorf("byteSize(%d) = %q, want %q", n, got, want)
		}
	}
}
