package bench

import (
	"unicode/utf8"
)

// fastEvent decodes the OpenAI stream chunks servers send for every token
// (completions' choices[].text, chat's choices[].delta) without
// encoding/json, whose reflection was a sixth of the benchmark client's CPU
// per token: the client shares the machine with the server it measures.
//
// It accepts only what it can decode exactly as json.Unmarshal into event
// would: the keys spelled as event's tags (encoding/json also matches
// other cases), each at most once; strings without escapes, control
// characters or invalid UTF-8; null logprobs and usage; no tool calls, no
// error, no native token. Anything else returns false, and the caller
// falls back to json.Unmarshal, so the result never depends on which path
// ran (TestFastEventMatchesUnmarshal, FuzzFastEvent).
func fastEvent(b []byte, ev *event) bool {
	p := &fastParser{b: b}
	seen := 0
	ok := p.object(func(key []byte) bool {
		bit := 0
		switch string(key) {
		case "id", "object", "model", "system_fingerprint":
			switch string(key) {
			case "id":
				bit = 1
			case "object":
				bit = 2
			case "model":
				bit = 4
			default:
				bit = 8
			}
			if _, ok := p.str(); !ok {
				return false
			}
		case "created":
			bit = 16
			if !p.number() {
				return false
			}
		case "usage":
			bit = 32
			if !p.null() { // a usage object comes once, at the end
				return false
			}
		case "choices":
			bit = 64
			if !p.choices(ev) {
				return false
			}
		default:
			return false
		}
		if seen&bit != 0 {
			return false // repeated key: leave last-one-wins to encoding/json
		}
		seen |= bit
		return true
	})
	p.ws()
	return ok && p.i == len(p.b)
}

// fastParser reads JSON from b at i; every method reports false on what it
// does not accept.
type fastParser struct {
	b []byte
	i int
}

func (p *fastParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// eat consumes c after whitespace.
func (p *fastParser) eat(c byte) bool {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object reads {"key": value, ...}, calling member after each key and
// its colon to read the value.
func (p *fastParser) object(member func(key []byte) bool) bool {
	if !p.eat('{') {
		return false
	}
	if p.eat('}') {
		return true
	}
	for {
		key, ok := p.str()
		if !ok || !p.eat(':') || !member(key) {
			return false
		}
		if p.eat('}') {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}

// str reads a string with no escapes, no control characters and valid
// UTF-8: its bytes are then its value. They alias b: keys and skipped
// values cost no allocation.
func (p *fastParser) str() ([]byte, bool) {
	if !p.eat('"') {
		return nil, false
	}
	start, ascii := p.i, true
	for ; p.i < len(p.b); p.i++ {
		c := p.b[p.i]
		switch {
		case c == '"':
			s := p.b[start:p.i]
			p.i++
			if !ascii && !utf8.Valid(s) {
				return nil, false // encoding/json substitutes U+FFFD
			}
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastParser) number() bool {
	p.ws()
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// null reads the literal null.
func (p *fastParser) null() bool {
	p.ws()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// choices reads the choices array into ev.
func (p *fastParser) choices(ev *event) bool {
	if !p.eat('[') {
		return false
	}
	ev.Choices = make([]eventChoice, 0, 1) // [] is an empty slice, as encoding/json's
	if p.eat(']') {
		return true
	}
	for {
		ev.Choices = append(ev.Choices, eventChoice{})
		c := &ev.Choices[len(ev.Choices)-1]
		seen := 0
		ok := p.object(func(key []byte) bool {
			bit := 0
			switch string(key) {
			case "text":
				bit = 1
				s, ok := p.str()
				if !ok {
					return false
				}
				c.Text = string(s)
			case "index":
				bit = 2
				if !p.number() {
					return false
				}
			case "logprobs":
				bit = 4
				if !p.null() {
					return false
				}
			case "finish_reason":
				bit = 8
				if !p.null() {
					s, ok := p.str()
					if !ok {
						return false
					}
					r := string(s)
					c.FinishReason = &r
				}
			case "delta":
				bit = 16
				d := &eventDelta{}
				c.Delta = d
				dseen := 0
				if !p.object(func(key []byte) bool {
					dbit := 0
					var dst *string
					switch string(key) {
					case "role":
						dbit = 1
					case "content":
						dbit, dst = 2, &d.Content
					case "reasoning_content":
						dbit, dst = 4, &d.ReasoningContent
					case "reasoning":
						dbit, dst = 8, &d.Reasoning
					default:
						return false // tool calls and the rest: encoding/json
					}
					if dseen&dbit != 0 {
						return false
					}
					dseen |= dbit
					if dst != nil && p.null() {
						return true // null leaves a string field as it was
					}
					s, ok := p.str()
					if ok && dst != nil {
						*dst = string(s)
					}
					return ok
				}) {
					return false
				}
			default:
				return false
			}
			if seen&bit != 0 {
				return false
			}
			seen |= bit
			return true
		})
		if !ok {
			return false
		}
		if p.eat(']') {
			return true
		}
		if !p.eat(',') {
			return false
		}
	}
}
