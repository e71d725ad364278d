package ipc

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMessageRoundTrip(t *testing.T) {
	for name, m := range map[string]Message{
		"group":       &NewGroup{GroupID: 1 << 40, Arrival: time.Unix(0, 1_700_000_000_123_456_789), Slots: []SlotRef{{0, 1}, {999, 1 << 31}}},
		"group empty": &NewGroup{Arrival: time.Unix(0, 0), Slots: []SlotRef{}},
		"counter":     &Metric{Kind: CounterAdd, Name: "lightllm_request_count", Labels: []Label{{"model_name", "stories"}, {"method", "generate"}}, Value: 1},
		"histogram":   &Metric{Kind: HistogramObserve, Name: "lightllm_request_duration", Value: math.Inf(1)},
		"gauge":       &Metric{Kind: GaugeSet, Name: "g", Value: -0.25},
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
	good := Encode(&NewGroup{GroupID: 5, Arrival: time.Unix(1, 0), Slots: []SlotRef{{1, 2}}})
	for name, b := range map[string][]byte{
		"empty":        nil,
		"one byte":     {byte(TypeMetric)},
		"unknown type": {99, formatVersion},
		"zero type":    {0, formatVersion},
		"old version":  {byte(TypeMetric), formatVersion + 1, 0},
		"truncated":    good[:len(good)-1],
		"trailing":     append(append([]byte{}, good...), 0),
		"huge count":   {byte(TypeNewGroup), formatVersion, 1, 0, 0xff, 0xff, 0x03},
		"gen overflow": {byte(TypeNewGroup), formatVersion, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 0x1f},
		"metric kind":  {byte(TypeMetric), formatVersion, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
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
		&NewGroup{GroupID: 3, Arrival: time.Unix(5, 6), Slots: []SlotRef{{1, 2}, {3, 4}}},
		&Metric{Kind: GaugeSet, Name: "x", Labels: []Label{{"a", "b"}}, Value: 2},
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

func TestBatchRoundTrip(t *testing.T) {
	ms := []Message{
		&Metric{Kind: CounterAdd, Name: "a", Value: 1},
		&NewGroup{GroupID: 7, Arrival: time.Unix(0, 5), Slots: []SlotRef{{3, 4}}},
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
