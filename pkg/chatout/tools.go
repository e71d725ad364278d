package chatout

import (
	"sort"
	"strings"
)

// toolFormat describes how a model family writes tool calls.
type toolFormat struct {
	// Trigger starts the calls anywhere in the answer ("" for none).
	Trigger string
	// AtStart: a call may also start without the trigger when the answer's
	// first non-space byte is '{' (Llama 3.1 writes bare JSON).
	AtStart bool
	// List: the calls are a JSON array after the trigger (Mistral).
	List bool
	// Sep separates consecutive call objects (';' for Llama 3, ',' in a
	// Mistral list); 0 for none.
	Sep byte
	// End closes each call (hermes "</tool_call>"); after it a new trigger
	// may start another call.
	End string
}

var toolFormats = map[string]toolFormat{
	// Hermes 2 Pro, Qwen2.5, Qwen3: <tool_call>\n{"name": …, "arguments": …}\n</tool_call>
	"hermes": {Trigger: "<tool_call>", End: "</tool_call>"},
	// Llama 3.1–3.3 JSON tool calling: {"name": …, "parameters": …}, several
	// separated by ';', optionally after <|python_tag|>.
	"llama3_json": {Trigger: "<|python_tag|>", AtStart: true, Sep: ';'},
	// Mistral: [TOOL_CALLS][{"name": …, "arguments": …}, …]
	"mistral": {Trigger: "[TOOL_CALLS]", List: true, Sep: ','},
}

// ToolParsers lists the tool call parser names.
func ToolParsers() []string {
	out := make([]string, 0, len(toolFormats))
	for k := range toolFormats {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ToolTrigger is the text that opens a call in format name ("" when
// unknown or when the format has none).
func ToolTrigger(name string) string { return toolFormats[name].Trigger }

type toolState uint8

const (
	tContent toolState = iota // answer text; looking for a trigger
	tList                     // after a list trigger: '[' expected
	tCall                     // inside a call object
	tAfter                    // after a call object: a separator, the end tag, or the list's ']'
	tEndTag                   // matching the end tag
	tDone                     // after the calls: remaining text is content
)

type toolMachine struct {
	f       toolFormat
	id      func(int) string
	st      toolState
	pending string // content held back (a possible trigger prefix)
	raw     string // text of the current attempt, since its trigger, for a fallback
	sc      *callScanner
	started bool // the current call's CallStart was emitted
	n       int  // calls emitted
	begun   bool // some non-space answer text was seen (AtStart)
	endPos  int  // bytes of f.End matched
}

func newToolMachine(f toolFormat, id func(int) string, inCall bool) *toolMachine {
	t := &toolMachine{f: f, id: id}
	if inCall {
		t.begun = true
		t.enterCalls()
	}
	return t
}

func (t *toolMachine) enterCalls() {
	if t.f.List {
		t.st = tList
		return
	}
	t.st, t.sc, t.started = tCall, &callScanner{}, false
}

func (t *toolMachine) push(text string, p *Parser) {
	for i := 0; i < len(text); {
		if t.st == tContent || t.st == tDone {
			i += t.contentText(text[i:], p)
			continue
		}
		c := text[i]
		i++
		t.raw += string(c)
		if !t.step(c, p) {
			t.fail(p)
		}
	}
}

// contentText consumes answer text up to (and including) a trigger; it
// returns the bytes consumed.
func (t *toolMachine) contentText(text string, p *Parser) int {
	if t.st == tDone {
		t.emitContent(text, p)
		return len(text)
	}
	s := t.pending + text
	if t.f.AtStart && !t.begun {
		j := strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune(spaces, r) })
		if j < 0 { // only spaces so far: hold them
			t.pending = s
			return len(text)
		}
		t.begun = true
		if s[j] == '{' {
			t.pending, t.raw = "", s[:j]
			t.enterCalls()
			return j - (len(s) - len(text)) // the '{' is read by the scanner
		}
	}
	if t.f.Trigger != "" {
		if k := strings.Index(s, t.f.Trigger); k >= 0 {
			if t.n == 0 || strings.Trim(s[:k], spaces) != "" {
				t.emitContent(s[:k], p)
			}
			consumed := k + len(t.f.Trigger) - len(t.pending)
			t.pending, t.raw = "", t.f.Trigger
			t.enterCalls()
			return consumed
		}
	}
	h := holdBack(s, t.f.Trigger)
	out := s[:len(s)-h]
	if t.n > 0 && strings.Trim(out, spaces) == "" {
		// Spaces between or after calls are held: they are dropped if
		// another call or the end follows.
		t.pending = s
		return len(text)
	}
	t.emitContent(out, p)
	t.pending = s[len(s)-h:]
	return len(text)
}

func (t *toolMachine) emitContent(s string, p *Parser) {
	if s != "" {
		p.emit(Event{Kind: Content, Text: s})
	}
}

// step reads one byte of call text; false means it is not a call after all.
func (t *toolMachine) step(c byte, p *Parser) bool {
	switch t.st {
	case tList:
		switch {
		case isSpace(c):
		case c == '[':
			t.st, t.sc, t.started = tCall, &callScanner{}, false
		default:
			return false
		}
	case tCall:
		if t.sc.feed(c) != nil {
			return false
		}
		t.release(p)
		if t.sc.st == sDone {
			t.st, t.raw = tAfter, ""
		}
	case tAfter:
		switch {
		case isSpace(c):
		case t.f.Sep != 0 && c == t.f.Sep:
			t.st, t.sc, t.started = tCall, &callScanner{}, false
		case t.f.List && c == ']':
			t.st = tDone
		case t.f.End != "" && c == t.f.End[0]:
			t.st, t.endPos = tEndTag, 1
			t.endTagDone()
		default:
			return false
		}
	case tEndTag:
		if c != t.f.End[t.endPos] {
			return false
		}
		t.endPos++
		t.endTagDone()
	}
	return true
}

func (t *toolMachine) endTagDone() {
	if t.endPos == len(t.f.End) {
		t.st, t.raw = tContent, ""
		t.begun = true
	}
}

// release emits the call's start once its name is known, then its
// argument text as it comes.
func (t *toolMachine) release(p *Parser) {
	if !t.sc.hasNm {
		return
	}
	if !t.started {
		t.started = true
		p.emit(Event{Kind: CallStart, Index: t.n, ID: t.id(t.n), Name: t.sc.name})
		t.n++
	}
	if a := t.sc.takeArgs(); a != "" {
		p.emit(Event{Kind: CallArgs, Index: t.n - 1, Text: a})
	}
}

// fail gives up on the current call: text not yet shown as a call becomes
// content, and no further calls are parsed.
func (t *toolMachine) fail(p *Parser) {
	if !t.started || t.st != tCall {
		t.emitContent(t.raw, p)
	}
	t.st, t.raw, t.pending = tDone, "", ""
}

func (t *toolMachine) finish(p *Parser) {
	switch t.st {
	case tContent:
		if t.n == 0 || strings.Trim(t.pending, spaces) != "" {
			t.emitContent(t.pending, p)
		}
	case tList, tCall:
		if !t.started {
			t.emitContent(t.raw, p)
		}
	}
	t.st, t.raw, t.pending = tDone, "", ""
}
