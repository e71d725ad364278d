package chatout

import "strings"

// HarmonyParser is the reasoning parser of gpt-oss's "harmony" format,
// where every message of the assistant's turn is framed by special tokens:
//
//	<|channel|>analysis<|message|>…thinking…<|end|>
//	<|start|>assistant<|channel|>final<|message|>…answer…<|return|>
//
// (the chat template's generation prompt already wrote the first
// "<|start|>assistant"). The analysis channel is reasoning; final and
// commentary without a recipient (a preamble the user may see) are
// content, as llama.cpp's gpt-oss parser reads them. A message addressed
// to a function (" to=functions.NAME" in its header, usually on the
// commentary channel, ended by <|call|>) is a tool call when the request
// offered tools (Config.Tools HarmonyParser): its body is the arguments.
// Without tools an unsolicited call's text is passed on as content rather
// than dropped.
// The markers are special tokens: the server keeps them in the text it
// parses (skip_special_tokens off) unless the request says otherwise.
const HarmonyParser = "gpt-oss"

// The harmony markers.
const (
	harmonyMessage = "<|message|>"
	harmonyChannel = "<|channel|>"
)

// harmonyEnds close a message: <|end|> (more messages follow), <|return|>
// (the turn's end) and <|call|> (a tool call's end).
var harmonyEnds = []string{"<|end|>", "<|return|>", "<|call|>"}

// maxHarmonyHeader bounds a message header: text that runs this long
// without <|message|> is not harmony framing and is passed on as content.
const maxHarmonyHeader = 512

type harmonyState uint8

const (
	hHeader harmonyState = iota // reading a message header, up to <|message|>
	hBody                       // inside a message's body
	hPlain                      // the output is not framed: all content
)

type harmony struct {
	st      harmonyState
	reason  bool // the current body is reasoning (else content)
	seen    bool // a header was read (framing established)
	pending string
	tools   bool             // function messages are tool calls
	callID  func(int) string // names call i
	call    int              // the call the current body is the arguments of, or -1
	calls   int              // calls started
}

func newHarmony(open bool) *harmony {
	h := &harmony{call: -1}
	if open {
		// The prompt ends inside an analysis message (a continued turn).
		h.st, h.reason, h.seen = hBody, true, true
	}
	return h
}

func (h *harmony) push(text string, p *Parser) {
	h.pending += text
	for {
		switch h.st {
		case hHeader:
			if i := strings.Index(h.pending, harmonyMessage); i >= 0 {
				header := h.pending[:i]
				h.reason = harmonyReasoning(header)
				if name, ok := strings.CutPrefix(harmonyRecipient(header), "functions."); ok && h.tools && name != "" {
					h.call = h.calls
					h.calls++
					p.emit(Event{Kind: CallStart, Index: h.call, ID: h.callID(h.call), Name: name})
				}
				h.pending, h.st, h.seen = h.pending[i+len(harmonyMessage):], hBody, true
				continue
			}
			t := strings.TrimLeft(h.pending, spaces)
			framed := strings.HasPrefix(t, "<|") || strings.HasPrefix("<|", t)
			if (!h.seen && !framed) || len(h.pending) > maxHarmonyHeader {
				h.st = hPlain
				continue
			}
			return
		case hBody:
			end, n := -1, 0
			for _, tag := range harmonyEnds {
				if i := strings.Index(h.pending, tag); i >= 0 && (end < 0 || i < end) {
					end, n = i, len(tag)
				}
			}
			if end >= 0 {
				h.emit(h.pending[:end], p)
				h.pending, h.st, h.call = h.pending[end+n:], hHeader, -1
				continue
			}
			hold := holdBack(h.pending, harmonyEnds...)
			h.emit(h.pending[:len(h.pending)-hold], p)
			h.pending = h.pending[len(h.pending)-hold:]
			return
		case hPlain:
			p.content(h.pending, false)
			h.pending = ""
			return
		}
	}
}

func (h *harmony) emit(text string, p *Parser) {
	switch {
	case h.call >= 0:
		if text != "" {
			p.emit(Event{Kind: CallArgs, Index: h.call, Text: text})
		}
	case h.reason:
		p.reasoning(text)
	default:
		p.content(text, false)
	}
}

// finish settles held-back text: a body cut short keeps its kind; an
// unfinished header (the output stopped inside the framing) carries no
// text of the model's answer, unless it was not framing at all.
func (h *harmony) finish(p *Parser) {
	t := strings.TrimLeft(h.pending, spaces)
	switch {
	case h.st == hBody:
		h.emit(h.pending, p)
	case h.st == hPlain, t != "" && !strings.HasPrefix(t, "<|"):
		p.content(h.pending, false)
	}
	h.pending = ""
}

// harmonyRecipient is the recipient a message header names (" to=X",
// before or after its channel), or "".
func harmonyRecipient(header string) string {
	i := strings.Index(header, " to=")
	if i < 0 {
		return ""
	}
	r := header[i+len(" to="):]
	if j := strings.IndexAny(r, " <"); j >= 0 {
		r = r[:j]
	}
	return r
}

// harmonyReasoning reports whether a message header opens reasoning: the
// analysis channel, addressed to no tool.
func harmonyReasoning(header string) bool {
	if strings.Contains(header, " to=") {
		return false
	}
	i := strings.Index(header, harmonyChannel)
	if i < 0 {
		return false
	}
	ch := header[i+len(harmonyChannel):]
	if j := strings.IndexAny(ch, " <"); j >= 0 {
		ch = ch[:j]
	}
	return ch == "analysis"
}
