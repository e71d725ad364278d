package bench

import (
	"encoding/json"
	"reflect"
	"testing"
)

// fastEventCases are stream events; fast says whether fastEvent must take
// them (the shapes servers send per token) or hand them to encoding/json.
var fastEventCases = []struct {
	name string
	in   string
	fast bool
}{
	{"completion chunk", `{"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"m","choices":[{"text":" Once","index":0,"logprobs":null,"finish_reason":null}]}`, true},
	{"completion chunk with usage null", `{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"text":"a","index":0,"logprobs":null,"finish_reason":null}],"usage":null}`, true},
	{"last chunk: finish reason length", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"text":"","index":0,"logprobs":null,"finish_reason":"length"}]}`, true},
	{"chat role chunk", `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`, true},
	{"chat content chunk", `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`, true},
	{"chat reasoning chunk", `{"choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":"x"},"finish_reason":null}]}`, true},
	{"chat content null", `{"choices":[{"index":0,"delta":{"content":null},"finish_reason":"stop"}]}`, true},
	{"usage chunk, empty choices", `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[]}`, true},
	{"two choices", `{"choices":[{"text":"a","index":0},{"text":"b","index":1,"finish_reason":"stop"}]}`, true},
	{"whitespace everywhere", " \t{ \"choices\" : [ { \"text\" : \"a\" , \"index\" : 0 } ] , \"created\" : -1.5e+3 }\r\n", true},
	{"numbers", `{"created":0,"choices":[{"index":-0.0e-0}]}`, true},
	{"multi-byte UTF-8 and U+2028 raw", "{\"choices\":[{\"text\":\"\u00e9\u4e2d\U0001F600\u2028\u2029\"}]}", true},
	{"empty object", `{}`, true},

	{"escaped quote", `{"choices":[{"text":"say \"hi\"","index":0}]}`, false},
	{"escaped newline", `{"choices":[{"text":"a\nb"}]}`, false},
	{"unicode escape", `{"choices":[{"text":"\u00e9\ud83d\ude00"}]}`, false},
	{"lone surrogate escape", `{"choices":[{"text":"\ud800"}]}`, false},
	{"escaped U+2028", `{"choices":[{"text":"\u2028"}]}`, false},
	{"invalid UTF-8", "{\"choices\":[{\"text\":\"a\xffb\"}]}", false},
	{"truncated UTF-8", "{\"choices\":[{\"text\":\"\xe4\xb8\"}]}", false},
	{"raw control character", "{\"choices\":[{\"text\":\"a\x01b\"}]}", false},
	{"raw newline in string", "{\"choices\":[{\"text\":\"a\nb\"}]}", false},
	{"key in other case", `{"choices":[{"Text":"a"}]}`, false},
	{"top key in other case", `{"Choices":[{"text":"a"}]}`, false},
	{"repeated key", `{"choices":[{"text":"a","text":"b"}]}`, false},
	{"repeated top key", `{"choices":[],"choices":[{"text":"b"}]}`, false},
	{"unknown key", `{"choices":[{"text":"a","extra":1}]}`, false},
	{"logprobs object", `{"choices":[{"text":"a","logprobs":{"tokens":["a"]}}]}`, false},
	{"usage object", `{"choices":[],"usage":{"prompt_tokens":16,"completion_tokens":64}}`, false},
	{"tool call delta", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}`, false},
	{"delta null", `{"choices":[{"delta":null}]}`, false},
	{"error event", `{"error":{"message":"boom"}}`, false},
	{"native token event", `{"token":{"id":5,"text":"a"},"finished":false}`, false},
	{"finish reason number", `{"choices":[{"finish_reason":1}]}`, false},
	{"text null", `{"choices":[{"text":null}]}`, false},
	{"choices null", `{"choices":null}`, false},
	{"bad number", `{"created":01}`, false},
	{"bad number dot", `{"created":1.}`, false},
	{"bad number exponent", `{"created":1e}`, false},
	{"trailing garbage", `{"choices":[]}x`, false},
	{"trailing second value", `{} {}`, false},
	{"truncated", `{"choices":[{"text":"a"`, false},
	{"missing comma", `{"choices":[{"text":"a" "index":0}]}`, false},
	{"trailing comma", `{"choices":[{"text":"a",}]}`, false},
	{"nullx", `{"usage":nullx}`, false},
	{"not an object", `[1]`, false},
	{"empty", ``, false},
}

// TestFastEventMatchesUnmarshal: what fastEvent accepts, json.Unmarshal
// decodes without error to the same event.
func TestFastEventMatchesUnmarshal(t *testing.T) {
	for _, c := range fastEventCases {
		t.Run(c.name, func(t *testing.T) {
			var fast event
			ok := fastEvent([]byte(c.in), &fast)
			if ok != c.fast {
				t.Fatalf("fastEvent took it: %v, want %v", ok, c.fast)
			}
			if ok {
				checkSameAsUnmarshal(t, []byte(c.in), &fast)
			}
		})
	}
}

func checkSameAsUnmarshal(t *testing.T, in []byte, fast *event) {
	t.Helper()
	var slow event
	if err := json.Unmarshal(in, &slow); err != nil {
		t.Fatalf("fastEvent accepted %q, encoding/json says %v", in, err)
	}
	if !reflect.DeepEqual(*fast, slow) {
		fj, _ := json.Marshal(fast)
		sj, _ := json.Marshal(slow)
		t.Fatalf("fastEvent decoded %q as\n%s\nencoding/json as\n%s", in, fj, sj)
	}
}

func FuzzFastEvent(f *testing.F) {
	for _, c := range fastEventCases {
		f.Add([]byte(c.in))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var fast event
		if fastEvent(in, &fast) {
			checkSameAsUnmarshal(t, in, &fast)
		}
	})
}

func BenchmarkStreamEvent(b *testing.B) {
	in := []byte(`{"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"default_model_name","choices":[{"text":" Once","index":0,"logprobs":null,"finish_reason":null}],"usage":null}`)
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			var ev event
			fastEvent(in, &ev)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var ev event
			json.Unmarshal(in, &ev)
		}
	})
}
