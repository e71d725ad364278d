package apiserver

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// nativeTopLevel are the keys of a LightLLM native request body.
var nativeTopLevel = setOf("inputs", "parameters", "stream", "multimodal_params")

// nativeParams are the keys LightLLM's SamplingParams.init reads, plus
// return_details and logprobs.
var nativeParams = setOf(slices.Concat(samplingFieldNames, []string{"best_of", "n", "input_penalty",
	"max_new_tokens", "min_new_tokens", "stop_sequences", "add_spaces_between_special_tokens",
	"print_eos_token", "disable_prompt_cache", "exponential_decay_length_penalty",
	"logit_bias", "allowed_token_ids", "return_details", "logprobs", "prompt_logprobs",
	"return_routed_experts", "regular_constraint", "guided_grammar", "guided_json",
	"image_max_patch_num", "suggested_dp_index", "group_request_id"})...)

// nativeRequest is a parsed /generate body.
type nativeRequest struct {
	group         Group
	returnDetails bool
	stream        bool
}

// parseNative parses and validates a native request, tokenizing the prompt
// and applying the length rule.
func (s *Server) parseNative(body []byte) (*nativeRequest, *apiError) {
	o, e := parseBody(body)
	if e != nil {
		return nil, e
	}
	o.rejectUnknown(nativeTopLevel)
	req := &nativeRequest{}
	if v := o.boolean("stream"); v != nil {
		req.stream = *v
	}
	if mm := o.child("multimodal_params"); mm != nil {
		for _, k := range mm.keys() {
			if elems := mm.array(k); len(elems) > 0 || mm.err != nil {
				o.fail(unsupported(mm.name(k), "multimodal inputs are not supported by this server (text-only models)"))
			}
		}
	}
	p := s.defaultParams(false)
	params := o.child("parameters")
	if params == nil {
		params, _ = parseObject([]byte("{}"), "parameters")
	}
	if o.err != nil {
		return nil, o.err
	}
	params.rejectUnknown(nativeParams)
	samplingFields(params, &p, false)
	maxTokensField(params, "max_new_tokens", &p)
	minTokensField(params, "min_new_tokens", 1, &p)
	if v := params.boolean("input_penalty"); v != nil {
		p.InputPenalty = *v
	}
	if v := params.boolean("add_spaces_between_special_tokens"); v != nil {
		p.SpacesBetweenSpecialTokens = *v
	}
	if v := params.boolean("print_eos_token"); v != nil {
		p.PrintEOSToken = *v
	}
	if v := params.boolean("disable_prompt_cache"); v != nil {
		p.DisablePromptCache = *v
	}
	if v := params.boolean("return_details"); v != nil {
		req.returnDetails = *v
	}
	if v := params.intIn("logprobs", 0, maxTopLogprobs); v != nil {
		p.TopLogprobs = int(*v)
	}
	s.stopSequences(params, "stop_sequences", &p)
	decayPenalty(params, "exponential_decay_length_penalty", &p)
	p.BannedTokenIDs = s.logitBiasKeys(params, "logit_bias")
	p.AllowedTokenIDs = s.idListField(params, "allowed_token_ids", maxAllowedTokenIDs)
	req.group.Constraint = nativeConstraint(params)
	nativeUnsupported(params)
	bestOf := params.intIn("best_of", 1, MaxBestOf)
	n := params.intIn("n", 1, MaxBestOf)
	if params.err != nil {
		return nil, params.err
	}
	switch {
	case bestOf == nil && n == nil:
		req.group.N = 1
	case bestOf == nil:
		req.group.N = int(*n)
	case n == nil:
		req.group.N = int(*bestOf)
	case *n != *bestOf:
		return nil, invalidValue("parameters.n", "current only supported n == best_of (n=%d, best_of=%d)", *n, *bestOf)
	default:
		req.group.N = int(*n)
	}
	if p.MinNewTokens > p.MaxNewTokens {
		return nil, invalidValue("parameters.min_new_tokens", "min_new_tokens must <= max_new_tokens, but got min %d, max %d",
			p.MinNewTokens, p.MaxNewTokens)
	}
	normalize(&p)

	raw, ok := o.raw("inputs")
	if !ok {
		return nil, badRequest(codeMissing, "inputs", "'inputs' is required: a string or an array of token ids")
	}
	var prompt []int32
	switch jsonKind(raw) {
	case "a string":
		text, e := decodeString(raw, "inputs")
		if e == nil {
			e = s.checkPromptChars(text, "inputs")
		}
		if e != nil {
			return nil, e
		}
		prompt = s.tok.Encode(text, p.AddSpecialTokens)
	case "an array":
		if prompt, e = decodeTokenIDs(raw, "inputs", s.vocab); e != nil {
			return nil, e
		}
	default:
		return nil, badRequest(codeInvalidType, "inputs", "'inputs' must be a string or an array of token ids, got %s", jsonKind(raw))
	}
	if e := s.applyLengthRule(len(prompt), &p, "max_new_tokens", "inputs"); e != nil {
		return nil, e
	}
	if e := s.checkConstraint(req.group.Constraint, &p); e != nil {
		return nil, e
	}
	req.group.Prompt, req.group.Params = prompt, p
	return req, nil
}

// nativeUnsupported refuses the LightLLM parameters this server does not
// implement, unless they are set to their "off" value.
func nativeUnsupported(o *object) {
	if v := o.integer("prompt_logprobs"); v != nil && *v != -1 {
		o.fail(unsupported(o.name("prompt_logprobs"), "'%s' is not supported by this server", o.name("prompt_logprobs")))
	}
	if v := o.boolean("return_routed_experts"); v != nil && *v {
		o.fail(unsupported(o.name("return_routed_experts"), "'%s' needs a mixture-of-experts model; not supported", o.name("return_routed_experts")))
	}
	// Only meaningful with images, data parallelism or P/D: accepted
	// as integers and without effect here.
	o.integer("image_max_patch_num")
	o.integer("suggested_dp_index")
	o.integer("group_request_id")
}

// handleCompat is LightLLM's POST /: {"stream": bool, ...} picks the API.
func (s *Server) handleCompat(w http.ResponseWriter, r *http.Request) {
	s.handleNative(w, r, nil)
}

func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request) {
	f := false
	s.handleNative(w, r, &f)
}

func (s *Server) handleGenerateStream(w http.ResponseWriter, r *http.Request) {
	t := true
	s.handleNative(w, r, &t)
}

// handleNative serves /generate (stream false), /generate_stream (true)
// and / (nil: the body's "stream" decides).
func (s *Server) handleNative(w http.ResponseWriter, r *http.Request, stream *bool) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	req, e := s.parseNative(body)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if stream != nil {
		req.stream = *stream
	}
	if req.stream && req.group.N != 1 {
		s.writeError(w, r, invalidValue("parameters.best_of", "stream api only support best_of == 1"))
		return
	}
	req.group.RequestID = requestIDFrom(r.Context())
	req.group.Arrival = time.Now()
	run, e := s.submit(r.Context(), r.URL.Path, &req.group)
	if run == nil {
		if e != nil {
			s.writeError(w, r, e)
		}
		return
	}
	defer run.close()
	if req.stream {
		s.nativeStream(w, r, run)
		return
	}
	s.nativeCollect(w, r, run, req.returnDetails)
}

// nativeToken is one token of a native stream event.
type nativeToken struct {
	ID                *int32                   `json:"id"`
	Text              string                   `json:"text"`
	Logprob           *float64                 `json:"logprob"`
	Special           bool                     `json:"special"`
	CountOutputTokens int                      `json:"count_output_tokens"`
	PromptTokens      int                      `json:"prompt_tokens"`
	Logprobs          map[string]nativeLogprob `json:"logprobs"`
}

type nativeLogprob struct {
	Logprob      float64 `json:"logprob"`
	Rank         *int    `json:"rank"`
	DecodedToken string  `json:"decoded_token"`
}

type inputUsage struct {
	Text  int `json:"input_text_tokens"`
	Audio int `json:"input_audio_tokens"`
	Image int `json:"input_image_tokens"`
}

// nativeEvent is one event of /generate_stream, keys in LightLLM's order.
type nativeEvent struct {
	Token         nativeToken `json:"token"`
	GeneratedText *string     `json:"generated_text"`
	Finished      bool        `json:"finished"`
	FinishReason  *string     `json:"finish_reason"`
	Details       *struct{}   `json:"details"`
	InputUsage    inputUsage  `json:"input_usage"`
}

// tokenLogprobs is LightLLM's per-token "logprobs": {"<id>": {logprob,
// rank, decoded_token}}, plus the alternatives when asked.
func (s *Server) tokenLogprobs(ev *Event) map[string]nativeLogprob {
	m := map[string]nativeLogprob{}
	if ev.TokenID < 0 || !ev.HasLogprob {
		return m
	}
	for i, alt := range ev.TopLogprobs {
		rank := i + 1
		m[strconv.Itoa(int(alt.TokenID))] = nativeLogprob{Logprob: roundLogprob(alt.Logprob), Rank: &rank,
			DecodedToken: s.tok.Decode([]int32{alt.TokenID}, false)}
	}
	var rank *int
	if ev.Rank > 0 {
		r := ev.Rank
		rank = &r
	}
	m[strconv.Itoa(int(ev.TokenID))] = nativeLogprob{Logprob: roundLogprob(ev.Logprob), Rank: rank,
		DecodedToken: s.tok.Decode([]int32{ev.TokenID}, false)}
	return m
}

func (s *Server) nativeTokenOf(ev *Event, promptTokens int) nativeToken {
	t := nativeToken{Text: ev.Text, Special: ev.Special, CountOutputTokens: ev.CountOutputTokens,
		PromptTokens: promptTokens, Logprobs: s.tokenLogprobs(ev)}
	if ev.TokenID >= 0 {
		id := ev.TokenID
		t.ID = &id
		if ev.HasLogprob {
			lp := roundLogprob(ev.Logprob)
			t.Logprob = &lp
		}
	}
	return t
}

func finishReasonPtr(ev *Event) *string {
	if !ev.Finished {
		return nil
	}
	r := string(ev.Reason)
	return &r
}

// nativeStream writes one "data:{json}" event per token, as LightLLM's
// lightllm_generate_stream (no [DONE]).
func (s *Server) nativeStream(w http.ResponseWriter, r *http.Request, run *run) {
	sse := newSSE(w, true)
	run.attach(sse)
	usage := inputUsage{Text: len(run.group.Prompt)}
	for {
		ev, ok, err := run.next(r.Context())
		if err != nil || !ok {
			return
		}
		out := nativeEvent{Token: s.nativeTokenOf(&ev, len(run.group.Prompt)), Finished: ev.Finished,
			FinishReason: finishReasonPtr(&ev), InputUsage: usage}
		if sse.event(out) != nil {
			return // client gone: run.close aborts
		}
	}
}

// nativeDetail is one entry of "tokens" (return_details), keys in the
// order LightLLM's metadata dict ends up with.
type nativeDetail struct {
	ID                  *int32   `json:"id"`
	Logprob             *float64 `json:"logprob"`
	Cumlogprob          *float64 `json:"cumlogprob"`
	Special             bool     `json:"special"`
	CountOutputTokens   int      `json:"count_output_tokens"`
	MTPAcceptedTokenNum int      `json:"mtp_accepted_token_num"`
	PromptTokens        int      `json:"prompt_tokens"`
	PromptCacheLen      int      `json:"prompt_cache_len"`
	Text                string   `json:"text"`
}

// nativeResponse is /generate's answer; the scalar-or-list fields are
// scalars when n == 1, as LightLLM's ret_data_format.
type nativeResponse struct {
	GeneratedText     []string   `json:"generated_text"`
	CountOutputTokens any        `json:"count_output_tokens"`
	FinishReason      any        `json:"finish_reason"`
	PromptTokens      int        `json:"prompt_tokens"`
	Tokens            any        `json:"tokens,omitempty"`
	Logprobs          any        `json:"logprobs"`
	InputUsage        inputUsage `json:"input_usage"`
}

// nativeCollect gathers every sequence and answers once, as LightLLM's
// lightllm_generate.
func (s *Server) nativeCollect(w http.ResponseWriter, r *http.Request, run *run, details bool) {
	n := run.group.N
	texts := make([]strings.Builder, n)
	counts := make([]int, n)
	reasons := make([]string, n)
	tokens := make([][]nativeDetail, n)
	logprobs := make([][]map[string]nativeLogprob, n)
	cum := make([]float64, n)
	for i := range logprobs {
		logprobs[i] = []map[string]nativeLogprob{}
		tokens[i] = []nativeDetail{}
	}
	for {
		ev, ok, err := run.next(r.Context())
		if err != nil {
			return // client gone
		}
		if !ok {
			break
		}
		i := ev.Seq
		texts[i].WriteString(ev.Text)
		if ev.TokenID >= 0 {
			counts[i]++
		}
		logprobs[i] = append(logprobs[i], s.tokenLogprobs(&ev))
		if ev.Finished {
			reasons[i] = string(ev.Reason)
		}
		if details {
			d := nativeDetail{Special: ev.Special, CountOutputTokens: ev.CountOutputTokens,
				PromptTokens: len(run.group.Prompt), PromptCacheLen: ev.PromptCacheLen, Text: ev.Text}
			if ev.TokenID >= 0 {
				id := ev.TokenID
				d.ID = &id
				if ev.HasLogprob {
					lp := roundLogprob(ev.Logprob)
					cum[i] += lp
					c := cum[i] / float64(max(ev.CountOutputTokens, 1))
					d.Logprob, d.Cumlogprob = &lp, &c
				}
			}
			tokens[i] = append(tokens[i], d)
		}
	}
	resp := nativeResponse{GeneratedText: make([]string, n), PromptTokens: len(run.group.Prompt),
		InputUsage: inputUsage{Text: len(run.group.Prompt)}}
	for i := range texts {
		resp.GeneratedText[i] = texts[i].String()
	}
	if n == 1 {
		resp.CountOutputTokens, resp.FinishReason, resp.Logprobs = counts[0], reasons[0], logprobs[0]
		if details {
			resp.Tokens = tokens[0]
		}
	} else {
		resp.CountOutputTokens, resp.FinishReason, resp.Logprobs = counts, reasons, logprobs
		if details {
			resp.Tokens = tokens
		}
	}
	writeJSON(w, http.StatusOK, resp)
}
