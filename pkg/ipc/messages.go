package ipc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Every ZMQ message of the instance is one of the types below, encoded as a
// single frame: a type byte, a format version byte, then the fields in
// order (unsigned varints for counts, uvarint-length-prefixed strings,
// little-endian float64). docs/protocol.md
// lists who sends each type on which channel and when.

// Type identifies a message on the wire.
type Type uint8

const (
	TypeMetric Type = iota + 1 // every role → metric
	// TypeBatch is a frame of several messages (EncodeBatch): the
	// OptionalPusher sends what queued up while it was writing in one
	// frame, one ZMQ write instead of one per message.
	TypeBatch
)

// formatVersion is the second byte of every message; bump it when a field
// or a type number changes so that a mixed-version pair fails loudly
// instead of misreading. 2: NewGroup (type 1) went when router →
// detokenizer became an shm ring (issue 25), and Metric and Batch moved up.
const formatVersion = 2

// Decode limits: a corrupt or hostile frame cannot make Decode allocate
// much.
const (
	MaxLabels = 32
	MaxString = 4096
	MaxBatch  = 256
)

// ErrBadMessage wraps every Decode error.
var ErrBadMessage = errors.New("ipc: bad message")

// Message is a *Metric, the only kind the metric channel carries; Decode
// still returns the interface so that a new kind is one more case, not a
// change to every receiver.
type Message interface {
	Type() Type
	appendTo(b []byte) []byte
	decodeFrom(d *decoder)
}

// MetricKind says how Metric.Value applies.
type MetricKind uint8

const (
	CounterAdd MetricKind = iota + 1
	GaugeSet
	HistogramObserve
)

// Label is one metric label; order is kept as sent.
type Label struct{ Name, Value string }

// Metric is one observation for the metric role's registry.
type Metric struct {
	Kind   MetricKind
	Name   string // e.g. "lightllm_request_count"
	Labels []Label
	Value  float64
}

func (*Metric) Type() Type { return TypeMetric }

// Encode returns the wire form of m.
func Encode(m Message) []byte {
	return m.appendTo([]byte{byte(m.Type()), formatVersion})
}

// EncodeBatch returns one frame holding the encoded messages frames (each
// from Encode, at most MaxBatch): the type and version bytes, the count,
// then each message length-prefixed.
func EncodeBatch(frames [][]byte) []byte {
	n := 2 + binary.MaxVarintLen64
	for _, f := range frames {
		n += binary.MaxVarintLen64 + len(f)
	}
	b := append(make([]byte, 0, n), byte(TypeBatch), formatVersion)
	b = binary.AppendUvarint(b, uint64(len(frames)))
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// DecodeFrame parses a frame into its messages: one, or a batch's. A
// malformed batch is an error for the whole frame; batches do not nest.
func DecodeFrame(b []byte) ([]Message, error) {
	if len(b) < 2 || Type(b[0]) != TypeBatch {
		m, err := Decode(b)
		if err != nil {
			return nil, err
		}
		return []Message{m}, nil
	}
	if b[1] != formatVersion {
		return nil, fmt.Errorf("format version %d, want %d: %w", b[1], formatVersion, ErrBadMessage)
	}
	d := &decoder{b: b[2:]}
	n := d.uvarint()
	if d.err == nil && (n == 0 || n > MaxBatch) {
		d.fail("batch of %d messages", n)
	}
	var out []Message
	for i := uint64(0); d.err == nil && i < n; i++ {
		l := d.uvarint()
		if d.err == nil && l > uint64(len(d.b)) {
			d.fail("message %d: %d bytes, %d left", i, l, len(d.b))
		}
		if d.err != nil {
			break
		}
		f := d.b[:l]
		d.b = d.b[l:]
		if len(f) >= 1 && Type(f[0]) == TypeBatch {
			return nil, fmt.Errorf("nested batch: %w", ErrBadMessage)
		}
		m, err := Decode(f)
		if err != nil {
			return nil, fmt.Errorf("batch message %d: %w", i, err)
		}
		out = append(out, m)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%v: %w", d.err, ErrBadMessage)
	}
	return out, nil
}

// Decode parses one frame. Every malformed input is an error wrapping
// ErrBadMessage.
func Decode(b []byte) (Message, error) {
	if len(b) < 2 {
		return nil, fmt.Errorf("%d-byte frame: %w", len(b), ErrBadMessage)
	}
	if b[1] != formatVersion {
		return nil, fmt.Errorf("format version %d, want %d: %w", b[1], formatVersion, ErrBadMessage)
	}
	var m Message
	switch Type(b[0]) {
	case TypeMetric:
		m = &Metric{}
	default:
		return nil, fmt.Errorf("type %d: %w", b[0], ErrBadMessage)
	}
	d := &decoder{b: b[2:]}
	m.decodeFrom(d)
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("%v: %w", d.err, ErrBadMessage)
	}
	return m, nil
}

func (m *Metric) appendTo(b []byte) []byte {
	b = append(b, byte(m.Kind))
	b = appendString(b, m.Name)
	b = binary.AppendUvarint(b, uint64(len(m.Labels)))
	for _, l := range m.Labels {
		b = appendString(b, l.Name)
		b = appendString(b, l.Value)
	}
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(m.Value))
}

func (m *Metric) decodeFrom(d *decoder) {
	m.Kind = MetricKind(d.byte())
	if m.Kind < CounterAdd || m.Kind > HistogramObserve {
		d.fail("metric kind %d", m.Kind)
	}
	m.Name = d.string()
	if n := d.count(MaxLabels); n > 0 {
		m.Labels = make([]Label, n)
		for i := range m.Labels {
			m.Labels[i] = Label{Name: d.string(), Value: d.string()}
		}
	}
	m.Value = math.Float64frombits(d.fixed64())
}

func appendString(b []byte, s string) []byte {
	if len(s) > MaxString {
		s = s[:MaxString] // the decoder rejects longer; truncation beats a lost message
	}
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads fields until the first error, after which every read
// returns zero values; callers check err once at the end.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf(format, a...)
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) count(limit int) int {
	v := d.uvarint()
	if v > uint64(limit) {
		d.fail("count %d over the limit %d", v, limit)
		return 0
	}
	return int(v)
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 1 {
		d.fail("truncated")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) fixed64() uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail("truncated float")
		return 0
	}
	v := binary.LittleEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) string() string {
	n := d.count(MaxString)
	if d.err != nil {
		return ""
	}
	if len(d.b) < n {
		d.fail("truncated string")
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
