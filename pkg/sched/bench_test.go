package sched

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkStep measures one scheduling step with 256 running and 1,000
// waiting requests: a full admission pass over the running set that rejects
// the head of the queue (the steady state of an overloaded router).
func BenchmarkStep(b *testing.B) {
	for _, name := range PolicyNames() {
		b.Run(name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			cfg := DefaultConfig(2_000_000)
			cfg.RunningMaxReqSize = 2048
			final := map[uint64]int{}
			p, err := NewPolicy(name, PolicyOptions{Seed: 1, Oracle: func(r *Request) int { return final[r.ID] }})
			if err != nil {
				b.Fatal(err)
			}
			s, err := New(cfg, p)
			if err != nil {
				b.Fatal(err)
			}
			for i := range 40 {
				p.Observe(1000 + 50*i)
			}
			running := mkReqs(1, 256, 0, 4096)
			used := 0
			for _, r := range running {
				r.InputLen = 100 + rng.IntN(3000)
				final[r.ID] = 1 + rng.IntN(4096)
			}
			for _, r := range running {
				if err := s.Submit([]*Request{r}); err != nil {
					b.Fatal(err)
				}
			}
			for range 100 {
				for _, r := range s.Step(StepInput{UsedTokens: used}).New {
					r.OutputLen = 1 + rng.IntN(final[r.ID])
					r.KVLen = r.HeldTarget()
					used += r.KVLen
				}
			}
			if len(s.Running()) != 256 {
				b.Fatalf("setup admitted %d", len(s.Running()))
			}
			// The head can never fit: every step evaluates and rejects it.
			head := &Request{ID: 10_000, InputLen: 1_990_000, MaxNewTokens: 10_000}
			final[head.ID] = 10_000
			if err := s.Submit([]*Request{head}); err != nil {
				b.Fatal(err)
			}
			for _, r := range mkReqs(10_001, 999, 500, 1000) {
				final[r.ID] = 500
				if err := s.Submit([]*Request{r}); err != nil {
					b.Fatal(err)
				}
			}
			for range 20 {
				s.Step(StepInput{UsedTokens: used}) // drain the intake
			}
			if s.Waiting() != 1000 || len(s.Running()) != 256 {
				b.Fatalf("setup: %d waiting, %d running", s.Waiting(), len(s.Running()))
			}
			b.ReportAllocs()
			for b.Loop() {
				if res := s.Step(StepInput{UsedTokens: used}); len(res.New) != 0 {
					b.Fatal("head admitted")
				}
			}
		})
	}
}
