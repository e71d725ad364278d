package chatout

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// result is a parse assembled from events.
type result struct {
	Reasoning string
	Content   string
	Calls     []Call
}

func assemble(t *testing.T, evs []Event, r *result) {
	t.Helper()
	for _, ev := range evs {
		switch ev.Kind {
		case Reasoning:
			r.Reasoning += ev.Text
		case Content:
			r.Content += ev.Text
		case CallStart:
			if ev.Index != len(r.Calls) {
				t.Fatalf("call start %d, want %d", ev.Index, len(r.Calls))
			}
			r.Calls = append(r.Calls, Call{ID: ev.ID, Name: ev.Name})
		case CallArgs:
			if ev.Index != len(r.Calls)-1 {
				t.Fatalf("args for call %d while call %d is open", ev.Index, len(r.Calls)-1)
			}
			r.Calls[ev.Index].Arguments += ev.Text
		}
	}
}

// parse feeds text in pieces cut at the given points.
func parse(t *testing.T, cfg Config, pieces []string) result {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	for _, s := range pieces {
		assemble(t, p.Push(s), &r)
	}
	assemble(t, p.Finish(), &r)
	if len(p.Calls()) != len(r.Calls) || (len(r.Calls) > 0 && !reflect.DeepEqual(p.Calls(), r.Calls)) {
		t.Fatalf("Calls() %+v, events %+v", p.Calls(), r.Calls)
	}
	return r
}

func splits(text string, rng *rand.Rand) []string {
	var out []string
	for len(text) > 0 {
		n := 1 + rng.IntN(min(len(text), 7))
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func TestParse(t *testing.T) {
	call := func(i int, name, args string) Call {
		return Call{ID: fmt.Sprintf("call_%d", i), Name: name, Arguments: args}
	}
	cases := []struct {
		name string
		cfg  Config
		text string
		want result
	}{
		{"plain", Config{}, "hello <tool_call> world", result{Content: "hello <tool_call> world"}},
		{"hermes one", Config{Tools: "hermes"},
			"Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			result{Content: "Let me look.\n", Calls: []Call{call(0, "get_weather", `{"city": "Paris"}`)}}},
		{"hermes two", Config{Tools: "hermes"},
			"<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": [1, {\"y\": \"}\\\"\"}]}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>\n",
			result{Calls: []Call{call(0, "a", `{"x": [1, {"y": "}\""}]}`), call(1, "b", `{}`)}}},
		{"hermes args first", Config{Tools: "hermes"},
			"<tool_call>{\"arguments\": {\"q\": 1}, \"name\": \"s\"}</tool_call>",
			result{Calls: []Call{call(0, "s", `{"q": 1}`)}}},
		{"hermes string args", Config{Tools: "hermes"},
			"<tool_call>{\"name\": \"s\", \"arguments\": \"{\\\"q\\\": 1}\"}</tool_call>",
			result{Calls: []Call{call(0, "s", `{"q": 1}`)}}},
		{"hermes no args", Config{Tools: "hermes"}, "<tool_call>{\"name\": \"now\"}</tool_call>",
			result{Calls: []Call{call(0, "now", `{}`)}}},
		{"hermes no end tag", Config{Tools: "hermes"}, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": true}}",
			result{Calls: []Call{call(0, "f", `{"a": true}`)}}},
		{"hermes not json", Config{Tools: "hermes"}, "x <tool_call> oops </tool_call> y",
			result{Content: "x <tool_call> oops </tool_call> y"}},
		{"hermes no name", Config{Tools: "hermes"}, "<tool_call>{\"arguments\": {}}</tool_call>",
			result{Content: "<tool_call>{\"arguments\": {}}</tool_call>"}},
		{"hermes partial trigger", Config{Tools: "hermes"}, "a <tool_ca", result{Content: "a <tool_ca"}},
		{"hermes cut short", Config{Tools: "hermes"}, "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"xy",
			result{Calls: []Call{call(0, "f", `{"a": "xy`)}}},
		{"hermes cut before name", Config{Tools: "hermes"}, "<tool_call>\n{\"na",
			result{Content: "<tool_call>\n{\"na"}},
		{"hermes in call", Config{Tools: "hermes", InCall: true}, "\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>",
			result{Calls: []Call{call(0, "f", `{"a": 1}`)}}},
		{"llama3 bare", Config{Tools: "llama3_json"}, "  {\"name\": \"f\", \"parameters\": {\"a\": 1}}; {\"name\": \"g\", \"parameters\": {}}",
			result{Calls: []Call{call(0, "f", `{"a": 1}`), call(1, "g", `{}`)}}},
		{"llama3 tag", Config{Tools: "llama3_json"}, "<|python_tag|>{\"name\": \"f\", \"arguments\": {\"n\": -1.5e3}}",
			result{Calls: []Call{call(0, "f", `{"n": -1.5e3}`)}}},
		{"llama3 json answer", Config{Tools: "llama3_json"}, "{\"answer\": 42}", result{Content: "{\"answer\": 42}"}},
		{"llama3 text", Config{Tools: "llama3_json"}, "The answer is {x}.", result{Content: "The answer is {x}."}},
		{"mistral", Config{Tools: "mistral"}, "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"arguments\": {\"b\": null}}]",
			result{Calls: []Call{call(0, "f", `{"a": 1}`), call(1, "g", `{"b": null}`)}}},
		{"mistral bad", Config{Tools: "mistral"}, "[TOOL_CALLS]f[ARGS]{}", result{Content: "[TOOL_CALLS]f[ARGS]{}"}},
		{"qwen3 think", Config{Reasoning: "qwen3"}, "<think>\nhmm, 1<2\n</think>\n\nThe answer.",
			result{Reasoning: "\nhmm, 1<2\n", Content: "The answer."}},
		{"qwen3 no think", Config{Reasoning: "qwen3"}, "Just <think> text", result{Content: "Just <think> text"}},
		{"qwen3 open prompt", Config{Reasoning: "qwen3", ThinkingOpen: true}, "deep thought</think>ok",
			result{Reasoning: "deep thought", Content: "ok"}},
		{"qwen3 unclosed", Config{Reasoning: "qwen3"}, "<think>still thinking </thi",
			result{Reasoning: "still thinking </thi"}},
		{"deepseek", Config{Reasoning: "deepseek-r1"}, "plan</think>\n\nanswer", result{Reasoning: "plan", Content: "answer"}},
		{"deepseek echo", Config{Reasoning: "deepseek-r1"}, "<think>plan", result{Reasoning: "plan"}},
		{"think then call", Config{Reasoning: "qwen3", Tools: "hermes"},
			"<think>I should call f.</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"k\": \"<tool_call>\"}}\n</tool_call>",
			result{Reasoning: "I should call f.", Calls: []Call{call(0, "f", `{"k": "<tool_call>"}`)}}},
		{"call mention in thinking", Config{Reasoning: "qwen3", Tools: "hermes"},
			"<think>use <tool_call> tags</think>fine", result{Reasoning: "use <tool_call> tags", Content: "fine"}},
		{"harmony", Config{Reasoning: HarmonyParser},
			"<|channel|>analysis<|message|>User asks 1<2. Easy.<|end|><|start|>assistant<|channel|>final<|message|>Yes: 1 < 2.<|return|>",
			result{Reasoning: "User asks 1<2. Easy.", Content: "Yes: 1 < 2."}},
		{"harmony no return", Config{Reasoning: HarmonyParser},
			"<|channel|>analysis<|message|>think<|end|><|start|>assistant<|channel|>final<|message|>answer <|",
			result{Reasoning: "think", Content: "answer <|"}},
		{"harmony preamble", Config{Reasoning: HarmonyParser},
			"<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>commentary<|message|>Checking.<|end|>" +
				"<|start|>assistant<|channel|>final<|message|>Done.",
			result{Reasoning: "a", Content: "Checking.Done."}},
		{"harmony unsolicited call", Config{Reasoning: HarmonyParser},
			"<|channel|>analysis<|message|>look it up<|end|><|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"q\": \"x\"}<|call|>",
			result{Reasoning: "look it up", Content: `{"q": "x"}`}},
		{"harmony analysis addressed", Config{Reasoning: HarmonyParser},
			"<|start|>assistant to=functions.f<|channel|>analysis<|message|>{}<|call|>", result{Content: "{}"}},
		{"harmony cut in header", Config{Reasoning: HarmonyParser},
			"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|chan", result{Reasoning: "x"}},
		{"harmony cut in body", Config{Reasoning: HarmonyParser}, "<|channel|>analysis<|message|>still <|en",
			result{Reasoning: "still <|en"}},
		{"harmony unframed", Config{Reasoning: HarmonyParser}, "Plain answer <|end|>", result{Content: "Plain answer <|end|>"}},
		{"harmony open prompt", Config{Reasoning: HarmonyParser, ThinkingOpen: true},
			"more thought<|end|><|start|>assistant<|channel|>final<|message|>ok", result{Reasoning: "more thought", Content: "ok"}},
		{"harmony call", Config{Reasoning: HarmonyParser, Tools: HarmonyParser},
			"<|channel|>analysis<|message|>look it up<|end|><|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{\"q\": \"x <|end\"}<|call|>",
			result{Reasoning: "look it up", Calls: []Call{call(0, "search", `{"q": "x <|end"}`)}}},
		{"harmony preamble and two calls", Config{Reasoning: HarmonyParser, Tools: HarmonyParser},
			"<|channel|>commentary<|message|>Checking both.<|end|>" +
				"<|start|>assistant<|channel|>commentary to=functions.a <|constrain|>json<|message|>{}<|call|>" +
				"<|start|>assistant to=functions.b<|channel|>commentary json<|message|>{\"n\": 1}<|call|>",
			result{Content: "Checking both.", Calls: []Call{call(0, "a", `{}`), call(1, "b", `{"n": 1}`)}}},
		{"harmony call to a non-function", Config{Reasoning: HarmonyParser, Tools: HarmonyParser},
			"<|channel|>commentary to=browser.search<|message|>{}<|call|>", result{Content: "{}"}},
		{"harmony call cut short", Config{Reasoning: HarmonyParser, Tools: HarmonyParser},
			"<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\": ", result{Calls: []Call{call(0, "f", `{"a": `)}}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole := parse(t, tc.cfg, []string{tc.text})
			if !reflect.DeepEqual(whole, tc.want) {
				t.Fatalf("whole:\n got %+v\nwant %+v", whole, tc.want)
			}
			bytewise := parse(t, tc.cfg, strings.Split(tc.text, ""))
			if !reflect.DeepEqual(bytewise, tc.want) {
				t.Fatalf("byte by byte:\n got %+v\nwant %+v", bytewise, tc.want)
			}
			for range 20 {
				if got := parse(t, tc.cfg, splits(tc.text, rng)); !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("random pieces:\n got %+v\nwant %+v", got, tc.want)
				}
			}
			for _, c := range whole.Calls {
				if len(whole.Calls) > 0 && !strings.HasSuffix(tc.name, "cut short") && !json.Valid([]byte(c.Arguments)) {
					t.Fatalf("arguments %q are not JSON", c.Arguments)
				}
			}
		})
	}
}

// TestStreamOrder: the name comes out before any argument text, and
// arguments come out in several pieces while they are generated.
func TestStreamOrder(t *testing.T) {
	p, err := New(Config{Tools: "hermes"})
	if err != nil {
		t.Fatal(err)
	}
	text := "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"long value\", \"b\": [1, 2, 3]}}\n</tool_call>"
	var kinds []Kind
	for _, c := range strings.Split(text, "") {
		for _, ev := range p.Push(c) {
			kinds = append(kinds, ev.Kind)
		}
	}
	if len(kinds) < 10 || kinds[0] != CallStart {
		t.Fatalf("events %v", kinds)
	}
	for _, k := range kinds[1:] {
		if k != CallArgs {
			t.Fatalf("events %v", kinds)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct{ tmpl, tools, reasoning string }{
		{"{{ '<tool_call>' }}</think>", "hermes", "qwen3"},
		{"[TOOL_CALLS]", "mistral", ""},
		{"<|start_header_id|>", "llama3_json", ""},
		{"<|im_start|>", "", ""},
		{"<|start|>assistant<|channel|>final<|message|>", "", HarmonyParser},
	} {
		if got := DetectToolParser(tc.tmpl); got != tc.tools {
			t.Errorf("DetectToolParser(%q) = %q, want %q", tc.tmpl, got, tc.tools)
		}
		if got := DetectReasoningParser(tc.tmpl); got != tc.reasoning {
			t.Errorf("DetectReasoningParser(%q) = %q, want %q", tc.tmpl, got, tc.reasoning)
		}
	}
	for _, tc := range []struct {
		prompt string
		open   bool
	}{
		{"<|im_start|>assistant\n<think>\n", true},
		{"<|im_start|>assistant\n<think>\n\n</think>\n\n", false},
		{"<|im_start|>assistant\n", false},
		{"<think>x", false},
	} {
		if got := ThinkingOpen(tc.prompt); got != tc.open {
			t.Errorf("ThinkingOpen(%q) = %v", tc.prompt, got)
		}
	}
	if _, err := New(Config{Tools: "nope"}); err == nil {
		t.Error("unknown tool parser accepted")
	}
	if _, err := New(Config{Reasoning: "nope"}); err == nil {
		t.Error("unknown reasoning parser accepted")
	}
	if _, err := New(Config{Reasoning: HarmonyParser, Tools: "hermes"}); err == nil {
		t.Error("a tool call parser accepted with the harmony format")
	}
}
