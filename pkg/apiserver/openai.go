package apiserver

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Fields both OpenAI endpoints take: OpenAI's own, then the extensions
// LightLLM and vLLM accept (top_k, repetition_penalty, ignore_eos, ...).
var openAICommon = slices.Concat(samplingFieldNames, []string{"model", "max_tokens", "max_completion_tokens", "n",
	"stream", "stream_options", "stop", "logit_bias", "user", "response_format",
	"min_tokens", "stop_token_ids", "spaces_between_special_tokens", "include_stop_str_in_output", "allowed_token_ids"})

// openAIRequest is what both endpoints parse in common.
type openAIRequest struct {
	model          string // as the client named it
	stream         bool
	includeUsage   bool
	continuousUse  bool
	includeStopStr bool
	params         SamplingParams
	maxName        string // the field that set the output limit, for errors
	constraint     *Constraint
}

// parseOpenAICommon reads the shared fields of a completions or chat body.
func (s *Server) parseOpenAICommon(o *object, req *openAIRequest, path string) {
	req.params = s.defaultParams(true)
	p := &req.params
	if v := o.str("model"); v != nil {
		req.model = *v
	}
	s.checkModelField(o)
	samplingFields(o, p, true)
	if v := o.float("temperature"); v != nil && *v > 2 {
		o.fail(invalidValue("temperature", "'temperature' must be in [0, 2], got %g", *v))
	}
	if v := o.boolean("stream"); v != nil {
		req.stream = *v
	}
	if so := o.child("stream_options"); so != nil {
		s.ignoreUnknown(so, setOf("include_usage", "continuous_usage_stats"), path)
		if v := so.boolean("include_usage"); v != nil {
			req.includeUsage = *v
		}
		if v := so.boolean("continuous_usage_stats"); v != nil {
			req.continuousUse = *v
		}
		if so.err != nil {
			o.fail(so.err)
		} else if !req.stream {
			o.fail(invalidValue("stream_options", "'stream_options' is only allowed when 'stream' is true"))
		}
	}
	req.maxName = "max_tokens"
	maxTokensField(o, "max_tokens", p)
	if o.has("max_completion_tokens") {
		req.maxName = "max_completion_tokens"
		maxTokensField(o, "max_completion_tokens", p)
	}
	minTokensField(o, "min_tokens", 0, p)
	if v := o.boolean("include_stop_str_in_output"); v != nil {
		req.includeStopStr = *v
	}
	s.stopStrings(o, "stop", p)
	s.stopTokenIDs(o, "stop_token_ids", p)
	p.LogitBias = s.openAILogitBias(o, "logit_bias")
	p.AllowedTokenIDs = s.idListField(o, "allowed_token_ids", maxAllowedTokenIDs) // vLLM's extension
	req.constraint = openAIConstraint(o)
	o.str("user")
}

// checkMinMax is LightLLM's min_new_tokens <= max_new_tokens, before the
// length rule.
func (req *openAIRequest) checkMinMax() *apiError {
	if req.params.MinNewTokens > req.params.MaxNewTokens {
		return invalidValue("min_tokens", "'min_tokens' (%d) must be <= '%s' (%d)",
			req.params.MinNewTokens, req.maxName, req.params.MaxNewTokens)
	}
	return nil
}

// responseModel is the model name a response carries: the client's, as
// LightLLM and vLLM echo it, or the served name.
func (s *Server) responseModel(req *openAIRequest) string {
	if req.model != "" {
		return req.model
	}
	return s.model
}

// usage is OpenAI's usage object.
type usage struct {
	PromptTokens        int           `json:"prompt_tokens"`
	CompletionTokens    int           `json:"completion_tokens"`
	TotalTokens         int           `json:"total_tokens"`
	PromptTokensDetails promptDetails `json:"prompt_tokens_details"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

func newUsage(prompt, completion, cached int) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion,
		PromptTokensDetails: promptDetails{CachedTokens: cached}}
}

// nullJSON is an explicit "usage": null on stream chunks when the client
// asked for usage (OpenAI's format), omitted otherwise.
var nullJSON = json.RawMessage("null")

// tokenText is the text a single token stands for (its bytes, lossily
// decoded when it is only part of a character).
func (s *Server) tokenText(id int32) (string, []int) {
	b := s.tok.TokenBytes(id)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	if utf8.Valid(b) {
		return string(b), ints
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), ints
}

// roundLogprob keeps float32 logprobs readable as float64 JSON numbers
// (the exact float32 value, as Python's float(np.float32) prints it).
func roundLogprob(v float32) float64 {
	f := float64(v)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return -9999 // JSON has no -Inf; OpenAI uses -9999.0 for "impossible"
	}
	return f
}

// streamFailure is the SSE error event for a sequence the backend lost.
func streamFailure(ev *Event) errorBody {
	msg := ev.Err
	if msg == "" {
		msg = "generation failed"
	}
	return internalError(msg).body()
}
