package apiserver

import "testing"

// TestNoLogProb: an OpenAI request that neither shows nor ranks its tokens'
// log-probabilities lets infer skip computing them (Params.NoLogProb);
// logprobs, top_logprobs or best_of above n need them.
func TestNoLogProb(t *testing.T) {
	s := testServer(t)
	for _, tc := range []struct {
		name, body string
		chat, want bool
	}{
		{"completion", `{"prompt":"hi"}`, false, true},
		{"completion logprobs 0", `{"prompt":"hi","logprobs":0}`, false, false},
		{"completion logprobs 3", `{"prompt":"hi","logprobs":3}`, false, false},
		{"completion n 2", `{"prompt":"hi","n":2}`, false, true},
		{"completion best_of 3 n 1", `{"prompt":"hi","best_of":3}`, false, false},
		{"chat", `{"messages":[{"role":"user","content":"hi"}]}`, true, true},
		{"chat logprobs false", `{"messages":[{"role":"user","content":"hi"}],"logprobs":false}`, true, true},
		{"chat logprobs", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true}`, true, false},
		{"chat top_logprobs", `{"messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":2}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bool
			if tc.chat {
				req, e := s.parseChat([]byte(tc.body))
				if e != nil {
					t.Fatal(e)
				}
				got = req.params.NoLogProb
			} else {
				req, e := s.parseCompletion([]byte(tc.body))
				if e != nil {
					t.Fatal(e)
				}
				for _, p := range req.groupParams {
					if p.NoLogProb != req.params.NoLogProb {
						t.Fatalf("prompt params NoLogProb %v, request %v", p.NoLogProb, req.params.NoLogProb)
					}
				}
				got = req.params.NoLogProb
			}
			if got != tc.want {
				t.Fatalf("NoLogProb %v, want %v", got, tc.want)
			}
		})
	}
}
