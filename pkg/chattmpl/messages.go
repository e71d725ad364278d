package chattmpl

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Message is one chat turn in the OpenAI shape that chat templates expect.
// Only fields that are set reach the template, so `message.name is defined`
// behaves as it does with HF's dicts.
type Message struct {
	Role             string     `json:"role"`
	Content          Content    `json:"content"`
	Name             string     `json:"name,omitempty"`
	ToolCalls        []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string     `json:"tool_call_id,omitempty"`
	ReasoningContent *string    `json:"reasoning_content,omitempty"`
}

// Content is a message's content: a string, a list of parts, or null.
// The zero value is the empty string.
type Content struct {
	Text  string
	Parts []*Map // non-nil: the list form, e.g. {"type":"text","text":"..."}
	Null  bool   // JSON null (an assistant turn holding only tool calls)
}

// TextContent returns string content.
func TextContent(s string) Content { return Content{Text: s} }

// MarshalJSON writes the string, the list of parts, or null.
func (c Content) MarshalJSON() ([]byte, error) {
	switch {
	case c.Null:
		return []byte("null"), nil
	case c.Parts != nil:
		return json.Marshal(c.Parts)
	}
	return json.Marshal(c.Text)
}

// UnmarshalJSON accepts a string, an array of part objects, or null.
func (c *Content) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	*c = Content{}
	switch {
	case bytes.Equal(data, []byte("null")):
		c.Null = true
		return nil
	case len(data) > 0 && data[0] == '"':
		return json.Unmarshal(data, &c.Text)
	case len(data) > 0 && data[0] == '[':
		v, err := DecodeJSON(data)
		if err != nil {
			return fmt.Errorf("content: %w", err)
		}
		c.Parts = []*Map{}
		for i, p := range v.([]any) {
			m, ok := p.(*Map)
			if !ok {
				return fmt.Errorf("content part %d: want an object, got %T", i, p)
			}
			c.Parts = append(c.Parts, m)
		}
		return nil
	}
	return fmt.Errorf("content: want a string, an array or null, got %.20s", data)
}

// ToolCall is an assistant's call of a tool.
type ToolCall struct {
	ID       string       `json:"id,omitempty"`
	Type     string       `json:"type,omitempty"`
	Function FunctionCall `json:"function"`
}

// FunctionCall names the function and carries its arguments as raw JSON:
// an object renders as a dict, a JSON string as a string (templates test
// `arguments is string` and handle both).
type FunctionCall struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// toMap builds the dict a template sees for this message.
func (m Message) toMap() *Map {
	out := NewMap().Set("role", m.Role)
	switch {
	case m.Content.Null:
		out.Set("content", nil)
	case m.Content.Parts != nil:
		parts := make([]any, len(m.Content.Parts))
		for i, p := range m.Content.Parts {
			parts[i] = p
		}
		out.Set("content", parts)
	default:
		out.Set("content", m.Content.Text)
	}
	if m.Name != "" {
		out.Set("name", m.Name)
	}
	if m.ToolCalls != nil {
		calls := make([]any, len(m.ToolCalls))
		for i, tc := range m.ToolCalls {
			call := NewMap()
			if tc.ID != "" {
				call.Set("id", tc.ID)
			}
			if tc.Type != "" {
				call.Set("type", tc.Type)
			}
			fn := NewMap().Set("name", tc.Function.Name)
			if len(tc.Function.Arguments) > 0 {
				fn.Set("arguments", tc.Function.Arguments)
			}
			call.Set("function", fn)
			calls[i] = call
		}
		out.Set("tool_calls", calls)
	}
	if m.ToolCallID != "" {
		out.Set("tool_call_id", m.ToolCallID)
	}
	if m.ReasoningContent != nil {
		out.Set("reasoning_content", *m.ReasoningContent)
	}
	return out
}
