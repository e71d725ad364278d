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
