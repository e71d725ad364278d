package metrics

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Event is one metric update: add to a counter, set a gauge or observe a
// histogram. Label is the value of the metric's extra label (method, role),
// "" when it has none; model_name is added by the metric role.
type Event struct {
	Kind  Kind
	Name  string
	Label string
	Value float64
}

// Wire format of one PUSH message, a batch of events (little endian):
//
//	offset size  field
//	0      1     magic 'M'
//	1      1     version (1)
//	2      2     count
//	4      ...   count × event: kind u8 | name_len u8 | name | label_len u8 | label | value f64
//
// Names and labels are at most 255 bytes; a batch holds at most MaxBatch
// events. Batching amortises one ZeroMQ frame over every event a role
// produced since the last send.
const (
	wireMagic   = 'M'
	wireVersion = 1
	// MaxBatch bounds the events in one message.
	MaxBatch   = 1024
	maxNameLen = 255
)

// AppendBatch appends the encoding of events to dst. It fails on a batch
// that is too long or an event whose name or label is too long.
func AppendBatch(dst []byte, events []Event) ([]byte, error) {
	if len(events) > MaxBatch {
		return dst, fmt.Errorf("encode metric batch: %d events, more than %d", len(events), MaxBatch)
	}
	dst = append(dst, wireMagic, wireVersion)
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(events)))
	for _, e := range events {
		if len(e.Name) == 0 || len(e.Name) > maxNameLen || len(e.Label) > maxNameLen {
			return dst, fmt.Errorf("encode metric event %q: name must be 1-%d bytes and label at most %d", e.Name, maxNameLen, maxNameLen)
		}
		dst = append(dst, byte(e.Kind), byte(len(e.Name)))
		dst = append(dst, e.Name...)
		dst = append(dst, byte(len(e.Label)))
		dst = append(dst, e.Label...)
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.Value))
	}
	return dst, nil
}

// DecodeBatch decodes one message, appending its events to dst. A truncated
// or malformed message is an error and yields none of its events.
func DecodeBatch(dst []Event, msg []byte) ([]Event, error) {
	if len(msg) < 4 || msg[0] != wireMagic {
		return dst, fmt.Errorf("decode metric batch: not a metric batch (%d bytes)", len(msg))
	}
	if msg[1] != wireVersion {
		return dst, fmt.Errorf("decode metric batch: version %d, want %d", msg[1], wireVersion)
	}
	n := int(binary.LittleEndian.Uint16(msg[2:4]))
	if n > MaxBatch {
		return dst, fmt.Errorf("decode metric batch: %d events, more than %d", n, MaxBatch)
	}
	start := len(dst)
	p := msg[4:]
	fail := func(i int) ([]Event, error) {
		return dst[:start], fmt.Errorf("decode metric batch: event %d of %d truncated", i, n)
	}
	for i := 0; i < n; i++ {
		if len(p) < 2 {
			return fail(i)
		}
		kind, nl := Kind(p[0]), int(p[1])
		p = p[2:]
		if nl == 0 {
			return dst[:start], fmt.Errorf("decode metric batch: event %d of %d has an empty name", i, n)
		}
		if len(p) < nl+1 {
			return fail(i)
		}
		name := string(p[:nl])
		ll := int(p[nl])
		p = p[nl+1:]
		if len(p) < ll+8 {
			return fail(i)
		}
		label := string(p[:ll])
		v := math.Float64frombits(binary.LittleEndian.Uint64(p[ll:]))
		p = p[ll+8:]
		dst = append(dst, Event{Kind: kind, Name: name, Label: label, Value: v})
	}
	if len(p) != 0 {
		return dst[:start], fmt.Errorf("decode metric batch: %d trailing bytes", len(p))
	}
	return dst, nil
}
