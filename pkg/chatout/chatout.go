// Package chatout reads what a chat model writes into what the OpenAI API
// returns: reasoning ("<think>…</think>", gpt-oss's analysis channel;
// reasoning_content), the answer
// (content) and tool calls in the model's own call format (hermes,
// llama3_json, mistral).
//
// It is incremental: Push takes text as the detokenizer releases it and
// returns what can be said for sure; text that might still turn into a tag
// or a call is held back, so a stream never retracts what it sent. A
// whole response is parsed by the same code (Push all, then Finish), so a
// streamed and a collected response always agree.
package chatout

import (
	"fmt"
	"strings"
)

// Kind says what an Event carries.
type Kind uint8

// Event kinds, in the order a response's parts appear.
const (
	Reasoning Kind = iota // Text is thinking text
	Content               // Text is answer text
	CallStart             // a tool call begins: Index, ID, Name
	CallArgs              // Text is the next fragment of call Index's arguments
)

// Event is one piece of parsed output.
type Event struct {
	Kind  Kind
	Text  string
	Index int // tool call index (CallStart, CallArgs)
	ID    string
	Name  string
}

// Call is a complete tool call.
type Call struct {
	ID        string
	Name      string
	Arguments string // JSON text, as the model wrote it
}

// Config selects the parsers; empty names disable one.
type Config struct {
	// Reasoning is a reasoning parser name (ReasoningParsers).
	Reasoning string
	// Tools is a tool call parser name (ToolParsers); "" parses no calls.
	// With the harmony reasoning parser it is HarmonyParser or "".
	Tools string
	// ThinkingOpen: the prompt already opened a thinking block (it ends in
	// "<think>" with no "</think>" after it), so output starts as reasoning.
	ThinkingOpen bool
	// CallID names call i (OpenAI's "call_…" ids).
	CallID func(i int) string
	// InCall: the prompt already ends with the format's call trigger (the
	// server wrote it to force a call), so output starts inside a call.
	InCall bool
}

// Parser parses one sequence's output.
type Parser struct {
	h     *harmony // gpt-oss's channels, in place of r
	r     *reasoner
	t     *toolMachine
	calls []Call
	out   []Event
}

// New checks cfg and returns a parser.
func New(cfg Config) (*Parser, error) {
	p := &Parser{}
	id := cfg.CallID
	if id == nil {
		id = func(i int) string { return fmt.Sprintf("call_%d", i) }
	}
	if cfg.Reasoning == HarmonyParser {
		// gpt-oss writes its tool calls in its own channels: Tools is
		// HarmonyParser too, or none.
		if cfg.Tools != "" && cfg.Tools != HarmonyParser {
			return nil, fmt.Errorf("reasoning parser %s: gpt-oss writes its tool calls in its own channels, which tool call parser %q cannot read", HarmonyParser, cfg.Tools)
		}
		if cfg.InCall {
			return nil, fmt.Errorf("reasoning parser %s: a call cannot be forced in the harmony format", HarmonyParser)
		}
		p.h = newHarmony(cfg.ThinkingOpen)
		p.h.tools, p.h.callID = cfg.Tools == HarmonyParser, id
		return p, nil
	}
	if cfg.Reasoning != "" {
		r, err := newReasoner(cfg.Reasoning, cfg.ThinkingOpen)
		if err != nil {
			return nil, err
		}
		p.r = r
	}
	if cfg.Tools != "" {
		f, ok := toolFormats[cfg.Tools]
		if !ok {
			return nil, fmt.Errorf("unknown tool call parser %q (have %s)", cfg.Tools, strings.Join(ToolParsers(), ", "))
		}
		p.t = newToolMachine(f, id, cfg.InCall)
	}
	return p, nil
}

// Push parses the next piece of text and returns the events it settles.
func (p *Parser) Push(text string) []Event {
	p.out = p.out[:0]
	switch {
	case p.h != nil:
		p.h.push(text, p)
	case p.r != nil:
		p.r.push(text, p)
	default:
		p.content(text, false)
	}
	return p.take()
}

// Finish ends the output: held-back text is settled (an unfinished tag is
// text; an unfinished call that has not started is content).
func (p *Parser) Finish() []Event {
	p.out = p.out[:0]
	if p.h != nil {
		p.h.finish(p)
	}
	if p.r != nil {
		p.r.finish(p)
	}
	p.content("", true)
	return p.take()
}

func (p *Parser) take() []Event {
	out := make([]Event, len(p.out))
	copy(out, p.out)
	return out
}

// Calls are the tool calls parsed so far (complete ones, and after Finish
// any call cut short, with the arguments it got).
func (p *Parser) Calls() []Call { return p.calls }

func (p *Parser) reasoning(text string) {
	if text != "" {
		p.emit(Event{Kind: Reasoning, Text: text})
	}
}

// content routes answer text through the tool parser, if any.
func (p *Parser) content(text string, final bool) {
	if p.t == nil {
		if text != "" {
			p.emit(Event{Kind: Content, Text: text})
		}
		return
	}
	p.t.push(text, p)
	if final {
		p.t.finish(p)
	}
}

// emit appends ev, merging it into the previous event of the same kind.
func (p *Parser) emit(ev Event) {
	switch ev.Kind {
	case CallStart:
		p.calls = append(p.calls, Call{ID: ev.ID, Name: ev.Name})
	case CallArgs:
		p.calls[ev.Index].Arguments += ev.Text
	}
	if n := len(p.out); n > 0 && ev.Kind != CallStart {
		last := &p.out[n-1]
		if last.Kind == ev.Kind && (ev.Kind != CallArgs || last.Index == ev.Index) {
			last.Text += ev.Text
			return
		}
	}
	p.out = append(p.out, ev)
}

// holdBack is how many trailing bytes of s could begin one of tags: they
// must wait for more text before they can be released.
func holdBack(s string, tags ...string) int {
	hold := 0
	for _, t := range tags {
		for k := min(len(t)-1, len(s)); k > hold; k-- {
			if strings.HasSuffix(s, t[:k]) {
				hold = k
				break
			}
		}
	}
	return hold
}
