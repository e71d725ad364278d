package chatout

import (
	"fmt"
	"sort"
	"strings"
)

// The thinking block's tags.
const (
	ThinkOpenTag  = "<think>"
	ThinkCloseTag = "</think>"
)

const spaces = " \t\r\n"

// reasoningParsers maps a name to whether output is reasoning even without
// an opening tag. qwen3: output is reasoning only when it opens with
// <think> (or the prompt opened the block, as Qwen3 thinking templates do);
// deepseek-r1: R1's template opens the block, so output is reasoning up to
// </think>, and an echoed leading <think> is dropped.
var reasoningParsers = map[string]bool{"qwen3": false, "deepseek-r1": true}

// ReasoningParsers lists the reasoning parser names.
func ReasoningParsers() []string {
	out := make([]string, 0, len(reasoningParsers)+1)
	for k := range reasoningParsers {
		out = append(out, k)
	}
	out = append(out, HarmonyParser)
	sort.Strings(out)
	return out
}

type reasonState uint8

const (
	rStart   reasonState = iota // nothing decided yet: a <think> may come
	rThink                      // inside the thinking block
	rAnswer                     // just after </think>: leading whitespace is dropped
	rContent                    // answer text passes through
)

type reasoner struct {
	st      reasonState
	always  bool
	pending string
}

func newReasoner(name string, open bool) (*reasoner, error) {
	always, ok := reasoningParsers[name]
	if !ok {
		return nil, fmt.Errorf("unknown reasoning parser %q (have %s)", name, strings.Join(ReasoningParsers(), ", "))
	}
	r := &reasoner{always: always}
	if open {
		r.st = rThink
	}
	return r, nil
}

func (r *reasoner) push(text string, p *Parser) {
	r.pending += text
	for {
		switch r.st {
		case rStart:
			t := strings.TrimLeft(r.pending, spaces)
			switch {
			case strings.HasPrefix(t, ThinkOpenTag):
				r.pending, r.st = t[len(ThinkOpenTag):], rThink
				continue
			case strings.HasPrefix(ThinkOpenTag, t): // "" or a prefix of the tag
				return
			case r.always:
				r.st = rThink
			default:
				r.st = rContent
			}
		case rThink:
			if i := strings.Index(r.pending, ThinkCloseTag); i >= 0 {
				p.reasoning(r.pending[:i])
				r.pending, r.st = r.pending[i+len(ThinkCloseTag):], rAnswer
				continue
			}
			h := holdBack(r.pending, ThinkCloseTag)
			p.reasoning(r.pending[:len(r.pending)-h])
			r.pending = r.pending[len(r.pending)-h:]
			return
		case rAnswer:
			r.pending = strings.TrimLeft(r.pending, spaces)
			if r.pending == "" {
				return
			}
			r.st = rContent
		case rContent:
			p.content(r.pending, false)
			r.pending = ""
			return
		}
	}
}

// finish settles held-back text: a tag that never completed is text.
func (r *reasoner) finish(p *Parser) {
	switch {
	case r.st == rThink || (r.st == rStart && r.always):
		p.reasoning(r.pending)
	case r.st == rStart:
		p.content(r.pending, false)
	}
	r.pending = ""
}
