package apiserver

import (
	"encoding/json"
	"net/http"
)

// responseOutputText is an output_text content part.
type responseOutputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

// responseMessage is the one output item: the assistant's message.
type responseMessage struct {
	Type    string               `json:"type"`
	ID      string               `json:"id"`
	Status  string               `json:"status"`
	Role    string               `json:"role"`
	Content []responseOutputText `json:"content"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// response is OpenAI's Response object.
type response struct {
	ID                 string            `json:"id"`
	Object             string            `json:"object"`
	CreatedAt          int64             `json:"created_at"`
	Status             string            `json:"status"`
	Model              string            `json:"model"`
	Output             []responseMessage `json:"output"`
	Usage              *responseUsage    `json:"usage"`
	IncompleteDetails  *map[string]any   `json:"incomplete_details"`
	Error              any               `json:"error"`
	Instructions       *string           `json:"instructions"`
	MaxOutputTokens    *int64            `json:"max_output_tokens"`
	Temperature        float64           `json:"temperature"`
	TopP               float64           `json:"top_p"`
	ParallelToolCalls  bool              `json:"parallel_tool_calls"`
	ToolChoice         string            `json:"tool_choice"`
	Tools              []any             `json:"tools"`
	Text               map[string]any    `json:"text"`
	Truncation         string            `json:"truncation"`
	Store              bool              `json:"store"`
	Metadata           json.RawMessage   `json:"metadata"`
	PreviousResponseID *string           `json:"previous_response_id"`
	Reasoning          any               `json:"reasoning"`
	User               *string           `json:"user"`
}

// responseObject builds the Response for text so far; done says the
// generation ended (with reason).
func (s *Server) responseObject(r *http.Request, req *responsesRequest, rn *run, text string, reason FinishReason, done bool) response {
	id := requestIDFrom(r.Context())
	resp := response{ID: "resp_" + id, Object: "response", CreatedAt: s.opts.Now().Unix(), Status: "in_progress",
		Model: s.responseModel(&req.openAIRequest), Output: []responseMessage{},
		Instructions: req.instructions, MaxOutputTokens: req.maxOutput,
		Temperature: req.temperature, TopP: req.topP, ParallelToolCalls: false, ToolChoice: "auto",
		Tools: []any{}, Text: map[string]any{"format": map[string]string{"type": "text"}}, Truncation: "disabled",
		Metadata: req.metadata, User: req.user}
	if resp.Metadata == nil {
		resp.Metadata = json.RawMessage("{}")
	}
	if !done {
		return resp
	}
	resp.Status = "completed"
	if reason == FinishLength {
		resp.Status = "incomplete"
		resp.IncompleteDetails = &map[string]any{"reason": "max_output_tokens"}
	}
	resp.Output = []responseMessage{s.responseItem(r, text, "completed")}
	out := rn.completionTokens()
	resp.Usage = &responseUsage{InputTokens: len(rn.group.Prompt), InputTokensDetails: map[string]int{"cached_tokens": rn.cacheLen},
		OutputTokens: out, OutputTokensDetails: map[string]int{"reasoning_tokens": 0}, TotalTokens: len(rn.group.Prompt) + out}
	return resp
}

func (s *Server) responseItem(r *http.Request, text, status string) responseMessage {
	m := responseMessage{Type: "message", ID: "msg_" + requestIDFrom(r.Context()), Status: status, Role: "assistant",
		Content: []responseOutputText{}}
	if status == "completed" {
		m.Content = []responseOutputText{{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}}
	}
	return m
}

// typedEvent writes one Responses API event: "event: TYPE" then its data.
func (s *sseWriter) typedEvent(typ string, v map[string]any) error {
	v["type"] = typ
	b, err := marshal(v)
	if err != nil {
		return err
	}
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write([]byte("event: " + typ + "\n")); err != nil {
		s.err = err
		return err
	}
	return s.raw(b)
}

// responsesStream streams OpenAI's event sequence for one message with one
// output_text part.
func (s *Server) responsesStream(w http.ResponseWriter, r *http.Request, req *responsesRequest, rn *run) {
	sse := newSSE(w, false)
	rn.attach(sse)
	seq := 0
	emit := func(typ string, v map[string]any) bool {
		v["sequence_number"] = seq
		seq++
		return sse.typedEvent(typ, v) == nil
	}
	itemID := "msg_" + requestIDFrom(r.Context())
	part := func(text string) responseOutputText {
		return responseOutputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
	}
	at := func(v map[string]any) map[string]any {
		v["item_id"], v["output_index"], v["content_index"] = itemID, 0, 0
		return v
	}
	start := s.responseObject(r, req, rn, "", FinishNone, false)
	if !emit("response.created", map[string]any{"response": start}) ||
		!emit("response.in_progress", map[string]any{"response": start}) ||
		!emit("response.output_item.added", map[string]any{"output_index": 0, "item": s.responseItem(r, "", "in_progress")}) ||
		!emit("response.content_part.added", at(map[string]any{"part": part("")})) {
		return
	}
	filter := s.newFilter(&req.openAIRequest)
	text := ""
	reason := FinishStop
	for {
		ev, ok, err := rn.next(r.Context())
		if err != nil {
			return
		}
		if !ok {
			break
		}
		if ev.Reason == FinishError {
			e := streamFailure(&ev)
			_ = emit("error", map[string]any{"code": e.Error.Code, "message": e.Error.Message, "param": nil})
			return
		}
		piece := filter.push(ev.Text)
		if ev.Finished {
			piece += filter.flush()
			reason = ev.Reason
		}
		if piece != "" {
			text += piece
			if !emit("response.output_text.delta", at(map[string]any{"delta": piece, "logprobs": []any{}})) {
				return
			}
		}
	}
	final := s.responseObject(r, req, rn, text, reason, true)
	end := "response.completed"
	if final.Status == "incomplete" {
		end = "response.incomplete"
	}
	_ = emit("response.output_text.done", at(map[string]any{"text": text, "logprobs": []any{}})) &&
		emit("response.content_part.done", at(map[string]any{"part": part(text)})) &&
		emit("response.output_item.done", map[string]any{"output_index": 0, "item": final.Output[0]}) &&
		emit(end, map[string]any{"response": final})
}
