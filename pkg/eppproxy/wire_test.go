package eppproxy

import (
	"bytes"
	"encoding/hex"
	"reflect"
	"testing"
)

// Golden ext_proc messages, as protobuf-go (deterministic) marshals
// go-control-plane/envoy v1.37.0's generated types. They were produced by a
// throwaway program, not kept in the repository, that built the same
// messages with the real types; the EPP answers are shaped as
// llm-d-router v0.10.0's pkg/epp/handlers builds them.
var golden = map[string]string{
	// request_headers {:method POST, :path /v1/completions, x-request-id r1},
	// protocol_config {FULL_DUPLEX_STREAMED, FULL_DUPLEX_STREAMED}
	"reqHeaders": "5a040804100412410a3f0a0f0a073a6d6574686f641a04504f53540a180a053a706174681a0f2f76312f636f6d706c6574696f6e730a120a0c782d726571756573742d69641a027231",
	// request_headers {:method GET, end_of_stream}, protocol_config
	"reqHeadersEOS": "5a040804100412140a100a0e0a073a6d6574686f641a034745541801",
	// response_headers {:status 200, content-type text/event-stream},
	// metadata_context {envoy.lb: {x-gateway-destination-endpoint-served: 10.0.0.1:8000}}
	"respHeaders": "42480a460a08656e766f792e6c62123a0a380a25782d676174657761792d64657374696e6174696f6e2d656e64706f696e742d736572766564120f1a0d31302e302e302e313a383030301a350a330a0e0a073a7374617475731a033230300a210a0c636f6e74656e742d747970651a11746578742f6576656e742d73747265616d",
	"reqBody":     "22130a0f7b2270726f6d7074223a226869227d1001", // request_body {{"prompt":"hi"}, eos}
	"reqBodyMid":  "22050a03616263",                             // request_body {abc}
	"respBodyEOS": "2a021001",                                   // response_body {eos}
	// request_headers answer: clear_route_cache, set x-gateway-destination-endpoint
	// (two endpoints), Content-Length 15, x-string-value (value, not raw_value),
	// x-appended (append: true), x-if-absent (ADD_IF_ABSENT); remove x-drop-me;
	// dynamic_metadata envoy.lb destination.
	"pickHeaders": "42530a510a08656e766f792e6c6212452a430a410a1e782d676174657761792d64657374696e6174696f6e2d656e64706f696e74121f1a1d3132372e302e302e313a383030312c3132372e302e302e313a383030320ab6010ab30112ae010a410a3f0a1e782d676174657761792d64657374696e6174696f6e2d656e64706f696e741a1d3132372e302e302e313a383030312c3132372e302e302e313a383030320a160a140a0e436f6e74656e742d4c656e6774681a0231350a190a170a0e782d737472696e672d76616c75651205706c61696e0a150a0f0a0a782d617070656e6465641a0161120208010a140a100a0b782d69662d616273656e741a016218011209782d64726f702d6d652801",
	// request_body answer: streamed_response {{"prompt":"hi"}, eos}
	"pickBody": "1a190a171a151a130a0f7b2270726f6d7074223a226869227d1001",
	// immediate_response {429, set x-llm-d-request-dropped-reason: evicted,
	// body "request evicted by flow control", details flow_control}
	"immediate429": "3a630a0308ad03122d0a2b0a290a1e782d6c6c6d2d642d726571756573742d64726f707065642d726561736f6e1a07657669637465641a1f72657175657374206576696374656420627920666c6f7720636f6e74726f6c2a0c666c6f775f636f6e74726f6c",
	// response_headers answer: set x-went-into-resp-headers: true
	"respHeadersAnswer": "12280a2612240a220a200a18782d77656e742d696e746f2d726573702d686561646572731a0474727565",
	// response_body answer: streamed_response {"data: [DONE]\n\n", eos}, dynamic_metadata
	"respBodyAnswer": "42530a510a08656e766f792e6c6212452a430a410a1e782d676174657761792d64657374696e6174696f6e2d656e64706f696e74121f1a1d3132372e302e302e313a383030312c3132372e302e302e313a3830303222180a161a141a120a0e646174613a205b444f4e455d0a0a1001",
	// request_body answer: CONTINUE_AND_REPLACE, body_mutation.body "new"
	"replaceBody": "1a0b0a0908011a050a036e6577",
}

func goldenBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := hex.DecodeString(golden[name])
	if err != nil || len(b) == 0 {
		t.Fatalf("golden %s: %v", name, err)
	}
	return b
}

func TestEncodeMatchesGoControlPlane(t *testing.T) {
	tests := []struct {
		name string
		got  []byte
	}{
		{"reqHeaders", EncodeRequestHeaders([]Header{{":method", "POST"}, {":path", "/v1/completions"}, {"x-request-id", "r1"}}, false)},
		{"reqHeadersEOS", EncodeRequestHeaders([]Header{{":method", "GET"}}, true)},
		{"respHeaders", EncodeResponseHeaders([]Header{{":status", "200"}, {"content-type", "text/event-stream"}}, false, "10.0.0.1:8000")},
		{"reqBody", EncodeRequestBody([]byte(`{"prompt":"hi"}`), true)},
		{"reqBodyMid", EncodeRequestBody([]byte("abc"), false)},
		{"respBodyEOS", EncodeResponseBody(nil, true)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if want := goldenBytes(t, tc.name); !bytes.Equal(tc.got, want) {
				t.Fatalf("encoding differs from go-control-plane's\n got %x\nwant %x", tc.got, want)
			}
		})
	}
}

func boolp(b bool) *bool { return &b }

func TestDecodeEPPAnswers(t *testing.T) {
	dest := "127.0.0.1:8001,127.0.0.1:8002"
	md := map[string]map[string]string{NamespaceLB: {DestinationEndpointKey: dest}}
	tests := []struct {
		name string
		want Response
	}{
		{"pickHeaders", Response{Kind: KindRequestHeaders, Metadata: md, Mutation: Mutation{
			ClearRouteCache: true,
			SetHeaders: []HeaderOption{
				{Header: Header{DestinationEndpointKey, dest}},
				{Header: Header{"Content-Length", "15"}},
				{Header: Header{"x-string-value", "plain"}},
				{Header: Header{"x-appended", "a"}, Append: boolp(true)},
				{Header: Header{"x-if-absent", "b"}, Action: addIfAbsent},
			},
			RemoveHeaders: []string{"x-drop-me"},
		}}},
		{"pickBody", Response{Kind: KindRequestBody, Mutation: Mutation{Streamed: true, StreamedBody: []byte(`{"prompt":"hi"}`), StreamedEOS: true}}},
		{"immediate429", Response{Kind: KindImmediate, Immediate: &Immediate{
			Status: 429, SetHeaders: []HeaderOption{{Header: Header{"x-llm-d-request-dropped-reason", "evicted"}}},
			Body: []byte("request evicted by flow control"), Details: "flow_control",
		}}},
		{"respHeadersAnswer", Response{Kind: KindResponseHeaders, Mutation: Mutation{SetHeaders: []HeaderOption{{Header: Header{"x-went-into-resp-headers", "true"}}}}}},
		{"respBodyAnswer", Response{Kind: KindResponseBody, Metadata: md, Mutation: Mutation{Streamed: true, StreamedBody: []byte("data: [DONE]\n\n"), StreamedEOS: true}}},
		{"replaceBody", Response{Kind: KindRequestBody, Mutation: Mutation{Status: 1, Replace: true, ReplaceBody: []byte("new")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeResponse(goldenBytes(t, tc.name))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("decoded\n %+v\nwant\n %+v", *got, tc.want)
			}
		})
	}
}

func TestDestinationsFromEPPAnswer(t *testing.T) {
	r, err := DecodeResponse(goldenBytes(t, "pickHeaders"))
	if err != nil {
		t.Fatal(err)
	}
	eps, err := destinations(r.Mutation.SetHeaders, r.Metadata)
	if err != nil || !reflect.DeepEqual(eps, []string{"127.0.0.1:8001", "127.0.0.1:8002"}) {
		t.Fatalf("destinations %v, %v", eps, err)
	}
	// Without the header, the dynamic metadata names the endpoint.
	eps, err = destinations(nil, r.Metadata)
	if err != nil || len(eps) != 2 {
		t.Fatalf("from metadata: %v, %v", eps, err)
	}
	for _, bad := range []string{"", "nohost", "10.0.0.1:0", "10.0.0.1:99999", ":8000"} {
		if _, err := destinations([]HeaderOption{{Header: Header{DestinationEndpointKey, bad}}}, nil); err == nil {
			t.Errorf("destination %q accepted", bad)
		}
	}
}

func TestApplyMutation(t *testing.T) {
	r, err := DecodeResponse(goldenBytes(t, "pickHeaders"))
	if err != nil {
		t.Fatal(err)
	}
	h := map[string][]string{"X-Drop-Me": {"1"}, "X-Appended": {"z"}, "X-If-Absent": {"keep"}, "Content-Length": {"3"}}
	applyMutation(h, r.Mutation.SetHeaders, r.Mutation.RemoveHeaders)
	want := map[string][]string{
		"X-Gateway-Destination-Endpoint": {"127.0.0.1:8001,127.0.0.1:8002"},
		"X-String-Value":                 {"plain"},
		"X-Appended":                     {"z", "a"},
		"X-If-Absent":                    {"keep"},
		"Content-Length":                 {"3"}, // the proxy sets it from the body it sends
	}
	if !reflect.DeepEqual(map[string][]string(h), want) {
		t.Fatalf("headers %v, want %v", h, want)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	tests := map[string]string{
		"truncated tag":         "8a",
		"length past the end":   "0a05616263",
		"truncated varint":      "08ff",
		"bad nested message":    "0a020aff",
		"nested length too big": "3a030a0308",
	}
	for name, hx := range tests {
		t.Run(name, func(t *testing.T) {
			b, _ := hex.DecodeString(hx)
			if _, err := DecodeResponse(b); err == nil {
				t.Fatal("malformed message accepted")
			}
		})
	}
}

func FuzzDecodeResponse(f *testing.F) {
	for name := range golden {
		b, _ := hex.DecodeString(golden[name])
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeResponse(b) // must not panic
	})
}
