package e2e

import (
	"net/http"
	"testing"
)

// testMinP (issue 17): min_p on the native API and both OpenAI endpoints.
// With min_p 0.99, sampling at temperature 1 keeps only tokens within 1% of
// the most likely one, so every seed gives the greedy text; without it the
// same seeds do not (the control, so that the check can fail); min_p out of
// [0, 1] is a 400 naming the field. chat is the chat server's client (nil:
// the chat endpoint is only checked for the 400).
func testMinP(t *testing.T, c *apiClient, chat *apiClient) {
	const prompt = "Once upon a time"
	native := func(extra map[string]any) string {
		p := map[string]any{"max_new_tokens": 40, "ignore_eos": true}
		for k, v := range extra {
			p[k] = v
		}
		var a apiNativeAnswer
		c.postJSON(t, "/generate", map[string]any{"inputs": prompt, "parameters": p}, &a)
		if len(a.GeneratedText) != 1 || a.Count != 40 {
			t.Fatalf("native %v: %d tokens, %d texts", extra, a.Count, len(a.GeneratedText))
		}
		return a.GeneratedText[0]
	}
	completion := func(fields map[string]any) string {
		body := map[string]any{"model": "m", "prompt": prompt, "max_tokens": 40, "ignore_eos": true}
		for k, v := range fields {
			body[k] = v
		}
		var a apiCompletion
		c.postJSON(t, "/v1/completions", body, &a)
		if len(a.Choices) != 1 {
			t.Fatalf("completions %v: %+v", fields, a)
		}
		return a.Choices[0].Text
	}
	greedy := native(map[string]any{"do_sample": false})
	greedyCompl := completion(map[string]any{"temperature": 0})
	differs := 0
	for _, seed := range []int{1, 2, 3} {
		if got := native(map[string]any{"do_sample": true, "temperature": 1, "seed": seed, "min_p": 0.99}); got != greedy {
			t.Errorf("native, seed %d, min_p 0.99:\n got %q\nwant the greedy %q", seed, got, greedy)
		}
		if got := completion(map[string]any{"temperature": 1, "seed": seed, "min_p": 0.99}); got != greedyCompl {
			t.Errorf("completions, seed %d, min_p 0.99:\n got %q\nwant the greedy %q", seed, got, greedyCompl)
		}
		if native(map[string]any{"do_sample": true, "temperature": 1, "seed": seed}) != greedy {
			differs++
		}
	}
	if differs == 0 {
		t.Error("without min_p, sampling at temperature 1 gave the greedy text for every seed: the check above proves nothing")
	}
	if chat != nil {
		msgs := []map[string]any{{"role": "user", "content": prompt}}
		chatText := func(fields map[string]any) string {
			body := map[string]any{"model": "m", "messages": msgs, "max_tokens": 40, "ignore_eos": true}
			for k, v := range fields {
				body[k] = v
			}
			var a apiChat
			chat.postJSON(t, "/v1/chat/completions", body, &a)
			if len(a.Choices) != 1 || a.Choices[0].Message == nil {
				t.Fatalf("chat %v: %+v", fields, a)
			}
			return a.Choices[0].Message.Content
		}
		want := chatText(map[string]any{"temperature": 0})
		for _, seed := range []int{1, 2} {
			if got := chatText(map[string]any{"temperature": 1, "seed": seed, "min_p": 0.99}); got != want {
				t.Errorf("chat, seed %d, min_p 0.99:\n got %q\nwant the greedy %q", seed, got, want)
			}
		}
	}
	for _, bad := range []float64{-0.1, 1.5} {
		for _, r := range []struct {
			path, param string
			body        map[string]any
		}{
			{"/generate", "parameters.min_p", map[string]any{"inputs": prompt, "parameters": map[string]any{"min_p": bad}}},
			{"/v1/completions", "min_p", map[string]any{"prompt": prompt, "min_p": bad}},
			{"/v1/chat/completions", "min_p", map[string]any{"messages": []map[string]any{{"role": "user", "content": prompt}}, "min_p": bad}},
		} {
			a := c.do(t, http.MethodPost, r.path, r.body)
			if err := (apiHostile{Status: 400, Code: "invalid_value", Param: r.param}).Check(a.status, a.body); err != nil {
				t.Errorf("%s min_p %v: %v", r.path, bad, err)
			}
		}
	}
}
