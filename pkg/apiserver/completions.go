package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

var completionFields = setOf(append([]string{"prompt", "suffix", "best_of", "logprobs", "echo"},
	append(structuredFields, openAICommon...)...)...)

// maxBatchPrompts bounds the prompts of one /v1/completions request.
const maxBatchPrompts = 256

// completionRequest is a parsed /v1/completions body.
type completionRequest struct {
	openAIRequest
	prompts     [][]int32
	promptTexts []string         // what echo prints
	groupParams []SamplingParams // per prompt, after the length rule
	n, bestOf   int
	logprobs    int // -1: none
	echo        bool
}

func (s *Server) parseCompletion(body []byte) (*completionRequest, *apiError) {
	o, e := parseBody(body)
	if e != nil {
		return nil, e
	}
	s.ignoreUnknown(o, completionFields, pathCompletions)
	req := &completionRequest{n: 1, logprobs: -1}
	s.parseOpenAICommon(o, &req.openAIRequest, pathCompletions)
	if v := o.intIn("n", 1, MaxBestOf); v != nil {
		req.n = int(*v)
	}
	req.bestOf = req.n
	if v := o.intIn("best_of", 1, MaxBestOf); v != nil {
		req.bestOf = int(*v)
	}
	if v := o.intIn("logprobs", 0, maxTopLogprobs); v != nil {
		req.logprobs = int(*v)
		req.params.TopLogprobs = int(*v)
	}
	if v := o.boolean("echo"); v != nil {
		req.echo = *v
	}
	if v := o.str("suffix"); v != nil && *v != "" {
		o.fail(unsupported("suffix", "The suffix parameter is not currently supported"))
	}
	if o.err != nil {
		return nil, o.err
	}
	switch {
	case req.bestOf < req.n:
		return nil, invalidValue("best_of", "'best_of' (%d) must be >= 'n' (%d)", req.bestOf, req.n)
	case req.stream && req.bestOf != req.n:
		return nil, invalidValue("best_of", "'best_of' must equal 'n' when streaming")
	}
	if e := req.checkMinMax(); e != nil {
		return nil, e
	}
	// Nothing shows or ranks the tokens' log-probabilities: best_of ranks
	// by them, logprobs shows them.
	req.params.NoLogProb = req.logprobs < 0 && req.bestOf == req.n
	normalize(&req.params)
	raw, ok := o.raw("prompt")
	if !ok {
		return nil, badRequest(codeMissing, "prompt", "'prompt' is required: a string, an array of strings, an array of token ids or an array of token id arrays")
	}
	if e := s.completionPrompts(raw, req); e != nil {
		return nil, e
	}
	if e := s.checkConstraint(req.constraint, &req.params); e != nil {
		return nil, e
	}
	if req.stream && len(req.prompts) > 1 {
		return nil, invalidValue("prompt", "Streaming is not supported for batch requests")
	}
	req.groupParams = make([]SamplingParams, len(req.prompts))
	for i, ids := range req.prompts {
		req.groupParams[i] = req.params
		if e := s.applyLengthRule(len(ids), &req.groupParams[i], req.maxName, "prompt"); e != nil {
			if len(req.prompts) > 1 {
				e.Message = "prompt " + strconv.Itoa(i) + ": " + e.Message
			}
			return nil, e
		}
	}
	return req, nil
}

// completionPrompts reads prompt: str | [str] | [int] | [[int]].
func (s *Server) completionPrompts(raw json.RawMessage, req *completionRequest) *apiError {
	addText := func(text, name string) *apiError {
		if e := s.checkPromptChars(text, name); e != nil {
			return e
		}
		req.prompts = append(req.prompts, s.tok.Encode(text, req.params.AddSpecialTokens))
		req.promptTexts = append(req.promptTexts, text)
		return nil
	}
	addIDs := func(el json.RawMessage, name string) *apiError {
		ids, e := decodeTokenIDs(el, name, s.vocab)
		if e != nil {
			return e
		}
		if len(ids) == 0 {
			return invalidValue(name, "Prompt cannot be empty")
		}
		req.prompts = append(req.prompts, ids)
		req.promptTexts = append(req.promptTexts, s.tok.Decode(ids, false))
		return nil
	}
	return promptForms(raw, "prompt", maxBatchPrompts, addText, addIDs)
}

// promptForms walks an OpenAI prompt or input field (raw, named field): a
// string, an array of strings, an array of token ids or an array of token
// id arrays, of at most max entries. text and ids get each string or id
// list with its parameter name (field, or field[i]).
func promptForms(raw json.RawMessage, field string, max int, text func(t, name string) *apiError, ids func(el json.RawMessage, name string) *apiError) *apiError {
	kinds := "'" + field + "' must be a string, an array of strings, an array of token ids or an array of token id arrays"
	switch jsonKind(raw) {
	case "a string":
		t, e := decodeString(raw, field)
		if e != nil {
			return e
		}
		return text(t, field)
	case "an array":
	default:
		return badRequest(codeInvalidType, field, kinds+", got %s", jsonKind(raw))
	}
	elems, e := decodeArray(raw, field)
	if e != nil {
		return e
	}
	if len(elems) == 0 {
		return invalidValue(field, "'%s' cannot be an empty array", field)
	}
	first := jsonKind(elems[0])
	switch first {
	case "a number":
		return ids(raw, field)
	case "a string", "an array":
	default:
		return badRequest(codeInvalidType, field, kinds+", got an array of %s", first)
	}
	if len(elems) > max {
		return invalidValue(field, "at most %d entries in '%s' per request, got %d", max, field, len(elems))
	}
	for i, el := range elems {
		name := field + "[" + strconv.Itoa(i) + "]"
		if k := jsonKind(el); k != first {
			return badRequest(codeInvalidType, field, "'%s' mixes kinds: %s[0] is %s, %s is %s", field, field, first, name, k)
		}
		var e *apiError
		if first == "a string" {
			var t string
			if t, e = decodeString(el, name); e == nil {
				e = text(t, name)
			}
		} else {
			e = ids(el, name)
		}
		if e != nil {
			return e
		}
	}
	return nil
}

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request) {
	body, e := s.readBody(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	req, e := s.parseCompletion(body)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	rid := requestIDFrom(r.Context())
	runs := make([]*run, 0, len(req.prompts))
	defer func() {
		for _, rn := range runs {
			rn.close()
		}
	}()
	now := time.Now()
	for i, ids := range req.prompts {
		g := &Group{RequestID: rid, Prompt: ids, N: req.bestOf, Params: req.groupParams[i], Arrival: now,
			Constraint: req.constraint}
		rn, e := s.submit(r.Context(), r.URL.Path, g)
		if rn == nil {
			if e != nil {
				s.writeError(w, r, e)
			}
			return
		}
		runs = append(runs, rn)
	}
	if req.stream {
		s.completionStream(w, r, req, runs[0])
		return
	}
	s.completionCollect(w, r, req, runs)
}

// tokenInfo is one generated token, for logprobs.
type tokenInfo struct {
	text    string
	logprob *float64
	top     []TokenLogprob
	id      int32
}

// seqResult is one finished sequence.
type seqResult struct {
	text    string
	reason  FinishReason
	err     string
	tokens  []tokenInfo
	cumProb float64
}

// collect reads a run to its end, applying the stop-string convention.
func (s *Server) collect(ctx context.Context, rn *run, req *openAIRequest) ([]seqResult, error) {
	res := make([]seqResult, rn.group.N)
	filters := make([]*stopFilter, rn.group.N)
	texts := make([][]byte, rn.group.N)
	for i := range filters {
		filters[i] = s.newFilter(req)
	}
	for {
		ev, ok, err := rn.next(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		i := ev.Seq
		texts[i] = append(texts[i], filters[i].push(ev.Text)...)
		if ev.TokenID >= 0 {
			ti := tokenInfo{text: ev.Text, id: ev.TokenID, top: ev.TopLogprobs}
			if ev.HasLogprob {
				lp := roundLogprob(ev.Logprob)
				ti.logprob = &lp
				res[i].cumProb += lp
			}
			res[i].tokens = append(res[i].tokens, ti)
		}
		if ev.Finished {
			texts[i] = append(texts[i], filters[i].flush()...)
			res[i].reason, res[i].err = ev.Reason, ev.Err
		}
	}
	for i := range res {
		res[i].text = string(texts[i])
	}
	return res, nil
}

// newFilter applies OpenAI's stop-string convention unless the client
// asked for vLLM's include_stop_str_in_output.
func (s *Server) newFilter(req *openAIRequest) *stopFilter {
	if req.includeStopStr {
		return newStopFilter(nil)
	}
	return newStopFilter(req.params.StopStrings())
}

// completionChoice is one choice of a completion or a completion chunk.
type completionChoice struct {
	Text         string              `json:"text"`
	Index        int                 `json:"index"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []*float64           `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   json.RawMessage    `json:"usage,omitempty"`
}

// addLogprobs appends tokens to a legacy logprobs object.
func (s *Server) addLogprobs(lp *completionLogprobs, offset int, toks []tokenInfo) int {
	for _, t := range toks {
		lp.Tokens = append(lp.Tokens, t.text)
		lp.TokenLogprobs = append(lp.TokenLogprobs, t.logprob)
		lp.TextOffset = append(lp.TextOffset, offset)
		offset += len(t.text)
		if t.logprob == nil {
			lp.TopLogprobs = append(lp.TopLogprobs, nil)
			continue
		}
		top := map[string]float64{}
		for _, alt := range t.top {
			txt, _ := s.tokenText(alt.TokenID)
			top[txt] = roundLogprob(alt.Logprob)
		}
		if len(top) == 0 {
			top[t.text] = *t.logprob
		}
		lp.TopLogprobs = append(lp.TopLogprobs, top)
	}
	return offset
}

// promptTokenInfos are the prompt's tokens for echo with logprobs (no
// prompt logprobs: null, as LightLLM without --enable_prompt_logprobs). A
// BOS or EOS the echoed text does not spell (a string prompt's BOS) is an
// empty token, and the first word's SentencePiece space, which decoding
// drops, is dropped here too, so that the tokens spell the text and
// text_offset counts only characters in it.
func (s *Server) promptTokenInfos(ids []int32, text string) []tokenInfo {
	out := make([]tokenInfo, len(ids))
	off := 0
	for i, id := range ids {
		txt, _ := s.tokenText(id)
		switch {
		case strings.HasPrefix(text[off:], txt):
			off += len(txt)
		case id == s.tok.BOS() || id == s.tok.EOS():
			txt = ""
		case off == 0 && strings.HasPrefix(txt, " ") && strings.HasPrefix(text, txt[1:]):
			txt = txt[1:]
			off += len(txt)
		}
		out[i] = tokenInfo{text: txt, id: id}
	}
	return out
}

func (s *Server) completionCollect(w http.ResponseWriter, r *http.Request, req *completionRequest, runs []*run) {
	results := make([][]seqResult, len(runs))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for i, rn := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = s.collect(r.Context(), rn, &req.openAIRequest)
		}()
	}
	wg.Wait()
	resp := completionResponse{ID: "cmpl-" + requestIDFrom(r.Context()), Object: "text_completion",
		Created: s.opts.Now().Unix(), Model: s.responseModel(&req.openAIRequest), Choices: []completionChoice{}}
	promptTokens, completionTokens, cached := 0, 0, 0
	for i, seqs := range results {
		if errs[i] != nil {
			return // the client is gone
		}
		promptTokens += len(runs[i].group.Prompt)
		completionTokens += runs[i].completionTokens()
		cached += runs[i].cacheLen
		for _, j := range bestOrder(seqs, req.n) {
			sr := seqs[j]
			if sr.reason == FinishError {
				s.writeError(w, r, generationFailed(sr.err))
				return
			}
			text := sr.text
			if req.echo {
				text = req.promptTexts[i] + text
			}
			c := completionChoice{Text: text, Index: len(resp.Choices)}
			reason := string(sr.reason)
			c.FinishReason = &reason
			if req.logprobs >= 0 {
				c.Logprobs = &completionLogprobs{Tokens: []string{}, TokenLogprobs: []*float64{},
					TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
				off := 0
				if req.echo {
					off = s.addLogprobs(c.Logprobs, 0, s.promptTokenInfos(runs[i].group.Prompt, req.promptTexts[i]))
				}
				s.addLogprobs(c.Logprobs, off, sr.tokens)
			}
			resp.Choices = append(resp.Choices, c)
		}
	}
	u, _ := marshal(newUsage(promptTokens, completionTokens, cached))
	resp.Usage = u
	writeJSON(w, http.StatusOK, resp)
}

// bestOrder picks the n sequences with the highest cumulative logprob
// (OpenAI's best_of), best first; with n == N it keeps the order.
func bestOrder(seqs []seqResult, n int) []int {
	idx := make([]int, len(seqs))
	for i := range idx {
		idx[i] = i
	}
	if n >= len(seqs) {
		return idx
	}
	sort.SliceStable(idx, func(a, b int) bool { return seqs[idx[a]].cumProb > seqs[idx[b]].cumProb })
	return idx[:n]
}

// completionStream streams one prompt's choices as text_completion chunks,
// then the usage chunk when asked, then [DONE].
func (s *Server) completionStream(w http.ResponseWriter, r *http.Request, req *completionRequest, rn *run) {
	sse := newSSE(w, false)
	rn.attach(sse)
	id := "cmpl-" + requestIDFrom(r.Context())
	created, model := s.opts.Now().Unix(), s.responseModel(&req.openAIRequest)
	n := rn.group.N
	filters := make([]*stopFilter, n)
	echoed := make([]bool, n)
	offsets := make([]int, n)
	for i := range filters {
		filters[i] = s.newFilter(&req.openAIRequest)
	}
	promptLen := len(rn.group.Prompt)
	chunkUsage := func() json.RawMessage {
		switch {
		case req.continuousUse:
			u, _ := marshal(newUsage(promptLen, rn.completionTokens(), rn.cacheLen))
			return u
		case req.includeUsage:
			return nullJSON
		}
		return nil
	}
	var evbuf []byte // one event's bytes, reused
	for {
		ev, ok, err := rn.next(r.Context())
		if err != nil {
			return
		}
		if !ok {
			break
		}
		i := ev.Seq
		if ev.Reason == FinishError {
			_ = sse.event(streamFailure(&ev))
			continue
		}
		text := ""
		if req.echo && !echoed[i] {
			text, echoed[i] = req.promptTexts[0], true
		}
		text += filters[i].push(ev.Text)
		if ev.Finished {
			text += filters[i].flush()
		}
		var lp *completionLogprobs
		if req.logprobs >= 0 && ev.TokenID >= 0 {
			ti := tokenInfo{text: ev.Text, id: ev.TokenID, top: ev.TopLogprobs}
			if ev.HasLogprob {
				v := roundLogprob(ev.Logprob)
				ti.logprob = &v
			}
			lp = &completionLogprobs{}
			offsets[i] = s.addLogprobs(lp, offsets[i], []tokenInfo{ti})
		}
		if text == "" && !ev.Finished && lp == nil {
			continue
		}
		c := completionChoice{Text: text, Index: i, Logprobs: lp, FinishReason: finishReasonPtr(&ev)}
		chunk := completionResponse{ID: id, Object: "text_completion", Created: created, Model: model,
			Choices: []completionChoice{c}, Usage: chunkUsage()}
		if b, ok := chunk.appendJSON(append(evbuf[:0], sse.prefix...)); ok {
			evbuf = append(b, '\n', '\n')
			err = sse.write(evbuf)
		} else {
			err = sse.event(chunk)
		}
		if err != nil {
			return
		}
	}
	if req.includeUsage || req.continuousUse {
		u, _ := marshal(newUsage(promptLen, rn.completionTokens(), rn.cacheLen))
		chunk := completionResponse{ID: id, Object: "text_completion", Created: created, Model: model,
			Choices: []completionChoice{}, Usage: u}
		if sse.event(chunk) != nil {
			return
		}
	}
	_ = sse.done()
}
