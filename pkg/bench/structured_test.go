package bench

import (
	"encoding/json"
	"testing"
)

// TestWithSchemas: the share is spread evenly and the schemas taken in
// turn; out-of-range shares and a share with no schemas are errors.
func TestWithSchemas(t *testing.T) {
	schemas := []json.RawMessage{json.RawMessage(`{"type":"integer"}`), json.RawMessage(`{"type":"string"}`)}
	for _, tc := range []struct {
		share float64
		want  string // per sample: . plain, 0/1 the schema
	}{
		{0, "........"},
		{0.5, ".0.1.0.1"},
		{0.25, "...0...1"},
		{1, "01010101"},
	} {
		s := make([]Sample, 8)
		if err := WithSchemas(s, tc.share, schemas); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, x := range s {
			switch string(x.Schema) {
			case "":
				got += "."
			case string(schemas[0]):
				got += "0"
			default:
				got += "1"
			}
		}
		if got != tc.want {
			t.Errorf("share %g: %s, want %s", tc.share, got, tc.want)
		}
	}
	for _, bad := range []float64{-0.1, 1.5} {
		if err := WithSchemas(make([]Sample, 2), bad, schemas); err == nil {
			t.Errorf("share %g: no error", bad)
		}
	}
	if err := WithSchemas(make([]Sample, 2), 0.5, nil); err == nil {
		t.Error("a share with no schemas: no error")
	}
}

// TestStructuredPayload: a structured sample asks for json_schema output
// (guided_json natively) and never sends ignore_eos; a plain one is as
// before.
func TestStructuredPayload(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	for _, api := range []API{APICompletions, APIChat, APILightLLM} {
		q := &requester{api: api, model: "m", ignoreEOS: true}
		for _, s := range []Sample{{Prompt: "p", OutputLen: 4, Schema: schema}, {Prompt: "p", OutputLen: 4}} {
			b, err := q.payload(s)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			if err := json.Unmarshal(b, &body); err != nil {
				t.Fatal(err)
			}
			params, _ := body["parameters"].(map[string]any)
			var constrained, ignore bool
			if api == APILightLLM {
				_, constrained = params["guided_json"]
				ignore = params["ignore_eos"] == true
			} else {
				rf, _ := body["response_format"].(map[string]any)
				constrained = rf != nil && rf["type"] == "json_schema"
				ignore = body["ignore_eos"] == true
			}
			if constrained != (s.Schema != nil) || ignore != (s.Schema == nil) {
				t.Errorf("%s schema %s: constrained %v, ignore_eos %v in %s", api, s.Schema, constrained, ignore, b)
			}
		}
	}
}
