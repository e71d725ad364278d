package ipc

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestMessageRoundTrip(t *testing.T) {
	for name, m := range map[string]Message{
		"counter":    &Metric{Kind: CounterAdd, Name: "lightllm_request_count", Labels: []Label{{"model_name", "stories"}, {"method", "generate"}}, Value: 1},
		"histogram":  &Metric{Kind: HistogramObserve, Name: "lightllm_request_duration", Value: math.Inf(1)},
		"gauge":      &Metric{Kind: GaugeSet, Name: "g", Value: -0.25},
		"empty name": &Metric{Kind: GaugeSet, Value: 1 << 53},
		"max labels": &Metric{Kind: CounterAdd, Name: "c", Labels: make([]Label, MaxLabels), Value: 2},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(Encode(m))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, m) {
				t.Fatalf("round trip:\n got %#v\nwant %#v", got, m)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	good := Encode(&Metric{Kind: CounterAdd, Name: "c", Labels: []Label{{"a", "b"}}, Value: 1})
	for name, b := range map[string][]byte{
		"empty":        nil,
		"one byte":     {byte(TypeMetric)},
		"unknown type": {99, formatVersion},
		"zero type":    {0, formatVersion},
		"old version":  {byte(TypeMetric), formatVersion + 1, 0},
		"truncated":    good[:len(good)-1],
		"trailing":     append(append([]byte{}, good...), 0),
		"huge count":   {byte(TypeMetric), formatVersion, 1, 0, 0xff, 0xff, 0x03},
		"many labels":  {byte(TypeMetric), formatVersion, 1, 0, MaxLabels + 1},
		"metric kind":  {byte(TypeMetric), formatVersion, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"zero kind":    {byte(TypeMetric), formatVersion, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
		"long string":  append([]byte{byte(TypeMetric), formatVersion, 1, 0xff, 0xff, 0x01}, make([]byte, 100)...),
	} {
		if m, err := Decode(b); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: Decode = %#v, %v; want ErrBadMessage", name, m, err)
		}
	}
}

func TestLongStringTruncated(t *testing.T) {
	m := &Metric{Kind: GaugeSet, Name: strings.Repeat("x", MaxString+10)}
	got, err := Decode(Encode(m))
	if err != nil {
		t.Fatal(err)
	}
	if d := got.(*Metric).Name; len(d) != MaxString {
		t.Fatalf("name of %d bytes, want truncation to %d", len(d), MaxString)
	}
}

// FuzzDecode: no input may panic Decode, and whatever decodes must encode
// back to the same bytes (the encoding is canonical).
func FuzzDecode(f *testing.F) {
	for _, m := range []Message{
		&Metric{Kind: GaugeSet, Name: "x", Labels: []Label{{"a", "b"}}, Value: 2},
		&Metric{Kind: HistogramObserve, Name: "lightllm_request_duration", Labels: []Label{{"model_name", "m"}, {"method", "generate"}}, Value: 0.125},
	} {
		f.Add(Encode(m))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			return
		}
		// Varints have several encodings of one value, so compare the
		// canonical re-encodings (bytes, so that NaN values compare too).
		enc := Encode(m)
		again, err := Decode(enc)
		if err != nil || !bytes.Equal(Encode(again), enc) {
			t.Fatalf("re-encode of %#v: %#v, %v", m, again, err)
		}
	})
}

// FuzzDecodeFrame: no input may panic DecodeFrame, and whatever decodes
// is 1..MaxBatch messages that batch up again to the same messages: what
// the metric role receives is exactly what some sender could have sent.
func FuzzDecodeFrame(f *testing.F) {
	one := Encode(&Metric{Kind: CounterAdd, Name: "c", Value: 1})
	f.Add(one)
	f.Add(EncodeBatch([][]byte{one, Encode(&Metric{Kind: GaugeSet, Name: "g", Labels: []Label{{"a", "b"}}, Value: 2})}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := DecodeFrame(b)
		if err != nil {
			return
		}
		if len(ms) == 0 || len(ms) > MaxBatch {
			t.Fatalf("%d messages from one frame", len(ms))
		}
		frames := make([][]byte, len(ms))
		for i, m := range ms {
			frames[i] = Encode(m)
		}
		again, err := DecodeFrame(EncodeBatch(frames))
		if err != nil || len(again) != len(ms) {
			t.Fatalf("re-batch of %d messages: %d, %v", len(ms), len(again), err)
		}
		for i, m := range again {
			if !bytes.Equal(Encode(m), frames[i]) {
				t.Fatalf("message %d: %#v, want %#v", i, m, ms[i])
			}
		}
	})
}

func TestBatchRoundTrip(t *testing.T) {
	ms := []Message{
		&Metric{Kind: CounterAdd, Name: "a", Value: 1},
		&Metric{Kind: GaugeSet, Name: "g", Labels: []Label{{"model_name", "m"}}, Value: -3},
		&Metric{Kind: HistogramObserve, Name: "h", Labels: []Label{{"method", "decode"}}, Value: 0.5},
	}
	for n := 1; n <= len(ms); n++ {
		frames := make([][]byte, n)
		for i := range frames {
			frames[i] = Encode(ms[i])
		}
		got, err := DecodeFrame(EncodeBatch(frames))
		if err != nil {
			t.Fatalf("%d messages: %v", n, err)
		}
		if !reflect.DeepEqual(got, ms[:n]) {
			t.Fatalf("%d messages:\n got %#v\nwant %#v", n, got, ms[:n])
		}
	}
	// A plain frame decodes as one message.
	if got, err := DecodeFrame(Encode(ms[0])); err != nil || !reflect.DeepEqual(got, ms[:1]) {
		t.Fatalf("single frame: %#v, %v", got, err)
	}
}

func TestDecodeFrameErrors(t *testing.T) {
	one := Encode(&Metric{Kind: GaugeSet, Name: "g"})
	good := EncodeBatch([][]byte{one, one})
	over := make([][]byte, MaxBatch+1)
	for i := range over {
		over[i] = one
	}
	for name, b := range map[string][]byte{
		"empty batch":   {byte(TypeBatch), formatVersion, 0},
		"old version":   {byte(TypeBatch), formatVersion + 1, 1},
		"truncated":     good[:len(good)-1],
		"trailing":      append(append([]byte{}, good...), 0),
		"length beyond": {byte(TypeBatch), formatVersion, 1, 0x7f, byte(TypeMetric)},
		"too many":      EncodeBatch(over),
		"nested":        EncodeBatch([][]byte{good}),
		"bad inner":     EncodeBatch([][]byte{one[:len(one)-1]}),
		"no count":      {byte(TypeBatch), formatVersion},
	} {
		if ms, err := DecodeFrame(b); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: DecodeFrame = %#v, %v; want ErrBadMessage", name, ms, err)
		}
	}
	// Decode (one message) refuses a batch: receivers call DecodeFrame.
	if _, err := Decode(good); !errors.Is(err, ErrBadMessage) {
		t.Errorf("Decode(batch) = %v", err)
	}
}
