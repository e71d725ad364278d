package apiserver

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/lightllm-go/lightllm/pkg/chatout"
)

// outputParsing is how a chat request's output is read back: which
// reasoning and tool call parsers run, and where the prompt left them.
type outputParsing struct {
	reasoning    string
	tools        string // "" when the request offers no tools
	thinkingOpen bool
	inCall       bool // the server wrote the call trigger (a forced call)
}

// newParser makes the parser of choice seq; call ids are derived from the
// request id, so a request replayed with the same x-request-id gets the
// same ids.
func (op outputParsing) newParser(requestID string, seq int) *chatout.Parser {
	p, err := chatout.New(chatout.Config{Reasoning: op.reasoning, Tools: op.tools, ThinkingOpen: op.thinkingOpen,
		InCall: op.inCall, CallID: func(i int) string { return callID(requestID, seq, i) }})
	if err != nil {
		// The names were checked when the server started.
		panic("apiserver: " + err.Error())
	}
	return p
}

func (op outputParsing) enabled() bool { return op.reasoning != "" || op.tools != "" }

func callID(requestID string, seq, i int) string {
	h := sha256.Sum256([]byte(requestID + "\x00" + strconv.Itoa(seq) + "\x00" + strconv.Itoa(i)))
	return "call_" + hex.EncodeToString(h[:12])
}

// toolCall is OpenAI's message.tool_calls[i].
type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function toolFunction `json:"function"`
}

type toolFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolCallDelta is a stream chunk's delta.tool_calls[i]: the first chunk
// of a call carries its id, type and name, later ones argument fragments.
type toolCallDelta struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function toolFunctionDelta `json:"function"`
}

type toolFunctionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

// parsedMessage fills a collected choice's message from its whole text.
func (op outputParsing) parsedMessage(text, requestID string, seq int, reason FinishReason) (chatMessage, FinishReason) {
	msg := chatMessage{Role: "assistant"}
	if !op.enabled() {
		msg.Content = &text
		return msg, reason
	}
	p := op.newParser(requestID, seq)
	var content, reasoning strings.Builder
	for _, evs := range [][]chatout.Event{p.Push(text), p.Finish()} {
		for _, ev := range evs {
			switch ev.Kind {
			case chatout.Content:
				content.WriteString(ev.Text)
			case chatout.Reasoning:
				reasoning.WriteString(ev.Text)
			}
		}
	}
	if c := content.String(); c != "" || len(p.Calls()) == 0 {
		msg.Content = &c
	}
	if r := reasoning.String(); r != "" {
		msg.ReasoningContent = &r
	}
	for _, c := range p.Calls() {
		msg.ToolCalls = append(msg.ToolCalls, toolCall{ID: c.ID, Type: "function", Function: toolFunction{Name: c.Name, Arguments: c.Arguments}})
	}
	if len(msg.ToolCalls) > 0 && reason == FinishStop {
		reason = FinishToolCalls
	}
	return msg, reason
}

// streamDeltas turns parser events into stream deltas, in order: text of
// one kind is merged, each call start is its own delta.
func streamDeltas(evs []chatout.Event) []chatDelta {
	var out []chatDelta
	for _, ev := range evs {
		switch ev.Kind {
		case chatout.Content:
			t := ev.Text
			out = append(out, chatDelta{Content: &t})
		case chatout.Reasoning:
			t := ev.Text
			out = append(out, chatDelta{ReasoningContent: &t})
		case chatout.CallStart:
			out = append(out, chatDelta{ToolCalls: []toolCallDelta{{Index: ev.Index, ID: ev.ID, Type: "function",
				Function: toolFunctionDelta{Name: ev.Name}}}})
		case chatout.CallArgs:
			out = append(out, chatDelta{ToolCalls: []toolCallDelta{{Index: ev.Index, Function: toolFunctionDelta{Arguments: ev.Text}}}})
		}
	}
	return out
}
