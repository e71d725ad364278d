package apiserver

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/lightllm-go/lightllm/pkg/sampler"
)

// LightLLM's limits on sampling parameters (core/objs/sampling_params.py).
const (
	maxStopSequences      = 10  // LIGHTLLM_MAX_STOP_SEQUENCES
	maxStopSequenceTokens = 256 // LIGHTLLM_STOP_SEQUENCE_MAX_LENGTH
	maxStopStringBytes    = 255 // < LIGHTLLM_STOP_SEQUENCE_STR_MAX_LENGTH (256)
	maxAllowedTokenIDs    = 256 // LIGHTLLM_ALLOWED_TOKEN_IDS_MAX_LENGTH
	maxBannedTokenIDs     = 10  // LIGHTLLM_INVALID_TOKEN_IDS_MAX_LENGTH (logit_bias keys)
	maxTopLogprobs        = 20
	defaultMaxNewTokens   = 65535 // LightLLM's default, then cut by the length rule
	samplingEps           = 1e-5  // below this temperature sampling is greedy
	// lengthMargin is LightLLM's reserve below the KV capacity.
	lengthMargin = 36
	// charsPerTokenBound: LightLLM rejects a string prompt longer than
	// max_req_total_len*8 characters before tokenizing it.
	charsPerTokenBound = 8
)

// GenerationDefaults are generation_config.json values that replace
// LightLLM's parameter defaults, as LightLLM's load_generation_cfg does; nil
// keeps LightLLM's own default.
type GenerationDefaults struct {
	DoSample          *bool
	Temperature       *float64
	TopP              *float64
	TopK              *int
	RepetitionPenalty *float64
	PresencePenalty   *float64
	FrequencyPenalty  *float64
}

// defaultParams are the parameters a request starts from. openAI selects
// the OpenAI endpoints' defaults: sampling on (temperature decides), special
// tokens skipped in the output, as vLLM and OpenAI clients expect.
func (s *Server) defaultParams(openAI bool) SamplingParams {
	p := SamplingParams{AddSpecialTokens: true, Params: sampler.Params{
		Temperature: 1, TopP: 1, TopK: -1, RepetitionPenalty: 1,
		MaxNewTokens: defaultMaxNewTokens, MinNewTokens: 1, Seed: -1,
		SpacesBetweenSpecialTokens: true,
		SkipSpecialTokens:          openAI || s.opts.SkipSpecialTokens,
		DecayStart:                 1, DecayFactor: 1, // exponential_decay_length_penalty off
		InputPenalty: s.opts.InputPenalty,
		DoSample:     openAI,
	}}
	d := s.opts.GenerationDefaults
	if d.DoSample != nil && !openAI {
		p.DoSample = *d.DoSample
	}
	setF := func(dst *float32, v *float64) {
		if v != nil {
			*dst = float32(*v)
		}
	}
	setF(&p.Temperature, d.Temperature)
	setF(&p.TopP, d.TopP)
	setF(&p.RepetitionPenalty, d.RepetitionPenalty)
	setF(&p.PresencePenalty, d.PresencePenalty)
	setF(&p.FrequencyPenalty, d.FrequencyPenalty)
	if d.TopK != nil {
		p.TopK = *d.TopK
	}
	return p
}

// samplingFieldNames are the fields samplingFields reads: the native API
// and both OpenAI endpoints accept them alike, so a sampling parameter
// added here and parsed in samplingFields reaches all three.
var samplingFieldNames = []string{"do_sample", "temperature", "top_p", "min_p", "top_k", "repetition_penalty",
	"presence_penalty", "frequency_penalty", "ignore_eos", "seed", "skip_special_tokens", "add_special_tokens"}

// vllmUnsupported are vLLM request fields (protocol.py) that change what is
// generated and that this server does not implement, with their "off"
// value when it is not one of null, false, 0, "", [] or {}.
var vllmUnsupported = map[string]string{
	"use_beam_search":            "",
	"length_penalty":             "1",
	"prompt_logprobs":            "",
	"bad_words":                  "",
	"logits_processors":          "",
	"return_tokens_as_token_ids": "",
	"return_token_ids":           "",
	"truncate_prompt_tokens":     "",
	"structured_outputs":         "",
	"priority":                   "",
	"cache_salt":                 "",
	"kv_transfer_params":         "",
	"vllm_xargs":                 "",
	"thinking_token_budget":      "",
	// chat only in vLLM; harmless to check on completions too.
	"echo":                   "",
	"continue_final_message": "",
	"chat_template":          "",
	"documents":              "",
}

// samplingFields reads the sampling parameters both APIs share, under the
// same names, range-checking each as LightLLM's verify() does (plus the
// NaN/huge-number checks it lacks). openAI selects OpenAI's ranges where
// they differ: any integer seed (see openAISeed).
func samplingFields(o *object, p *SamplingParams, openAI bool) {
	if v := o.boolean("do_sample"); v != nil {
		p.DoSample = *v
	}
	if v := o.float("temperature"); v != nil {
		if *v < 0 {
			o.fail(invalidValue(o.name("temperature"), "'%s' must be >= 0, got %g", o.name("temperature"), *v))
		}
		p.Temperature = float32(*v)
	}
	if v := o.float("top_p"); v != nil {
		if *v <= 0 || *v > 1 {
			o.fail(invalidValue(o.name("top_p"), "'%s' must be in (0, 1], got %g", o.name("top_p"), *v))
		}
		p.TopP = float32(*v)
	}
	if v := o.float("min_p"); v != nil {
		if *v < 0 || *v > 1 {
			o.fail(invalidValue(o.name("min_p"), "'%s' must be in [0, 1], got %g", o.name("min_p"), *v))
		}
		p.MinP = float32(*v)
	}
	if v := o.intIn("top_k", -1, math.MaxInt32); v != nil {
		if *v == 0 {
			o.fail(invalidValue(o.name("top_k"), "'%s' must be -1 (disable) or at least 1, got 0", o.name("top_k")))
		}
		p.TopK = int(*v)
	}
	if v := o.float("repetition_penalty"); v != nil {
		if *v < 1 || *v > 1e6 {
			o.fail(invalidValue(o.name("repetition_penalty"), "'%s' must be in [1, 1e6], got %g", o.name("repetition_penalty"), *v))
		}
		p.RepetitionPenalty = float32(*v)
	}
	for _, k := range []string{"presence_penalty", "frequency_penalty"} {
		v := o.float(k)
		if v == nil {
			continue
		}
		switch {
		case openAI && (*v < -2 || *v > 2):
			o.fail(invalidValue(o.name(k), "'%s' must be in [-2, 2], got %g", o.name(k), *v))
		case !openAI && (*v < 0 || *v > 1e6):
			o.fail(invalidValue(o.name(k), "'%s' must be in [0, 1e6], got %g", o.name(k), *v))
		}
		if k == "presence_penalty" {
			p.PresencePenalty = float32(*v)
		} else {
			p.FrequencyPenalty = float32(*v)
		}
	}
	if v := o.boolean("ignore_eos"); v != nil {
		p.IgnoreEOS = *v
	}
	if v := o.integer("seed"); v != nil && openAI {
		p.Seed = openAISeed(*v)
	} else if v != nil {
		if *v < -1 {
			o.fail(invalidValue(o.name("seed"), "'%s' must be -1 (random) or an integer in [0, %d], got %d", o.name("seed"), int64(math.MaxInt64), *v))
		}
		p.Seed = *v
	}
	if v := o.boolean("skip_special_tokens"); v != nil {
		p.SkipSpecialTokens = *v
	}
	if v := o.boolean("spaces_between_special_tokens"); v != nil {
		p.SpacesBetweenSpecialTokens = *v
	}
	if v := o.boolean("add_special_tokens"); v != nil {
		p.AddSpecialTokens = *v
	}
}

// maxTokensField reads a max-new-tokens field (>= 1; huge values are cut
// by the length rule later, as LightLLM does).
func maxTokensField(o *object, k string, p *SamplingParams) {
	if v := o.intIn(k, 1, math.MaxInt32); v != nil {
		p.MaxNewTokens = int(*v)
	}
}

// minTokensField reads a min-new-tokens field (>= 1 as LightLLM's; vLLM's
// min_tokens 0 means the same as 1).
func minTokensField(o *object, k string, lo int64, p *SamplingParams) {
	if v := o.intIn(k, lo, math.MaxInt32); v != nil {
		p.MinNewTokens = max(int(*v), 1)
	}
}

// stopStrings parses OpenAI's stop: a string or a list of strings.
func (s *Server) stopStrings(o *object, k string, p *SamplingParams) {
	raw, ok := o.raw(k)
	if !ok {
		return
	}
	name := o.name(k)
	if jsonKind(raw) == "a string" {
		str, e := decodeString(raw, name)
		if e != nil {
			o.fail(e)
			return
		}
		o.fail(s.addStop(p, StopSequence{Text: str}, name))
		return
	}
	elems, e := decodeArray(raw, name)
	if e != nil {
		o.fail(badRequest(codeInvalidType, name, "'%s' must be a string or an array of strings, got %s", name, jsonKind(raw)))
		return
	}
	for i, el := range elems {
		str, e := decodeString(el, name+"["+strconv.Itoa(i)+"]")
		if e != nil {
			o.fail(e)
			return
		}
		if e := s.addStop(p, StopSequence{Text: str}, name); e != nil {
			o.fail(e)
			return
		}
	}
}

// stopSequences parses LightLLM's stop_sequences: a string, or a list of
// strings and token id lists.
func (s *Server) stopSequences(o *object, k string, p *SamplingParams) {
	raw, ok := o.raw(k)
	if !ok {
		return
	}
	name := o.name(k)
	if jsonKind(raw) == "a string" {
		str, e := decodeString(raw, name)
		if e == nil {
			e = s.addStop(p, StopSequence{Text: str}, name)
		}
		o.fail(e)
		return
	}
	elems, e := decodeArray(raw, name)
	if e != nil {
		o.fail(badRequest(codeInvalidType, name, "'%s' must be a string or an array of strings and token id arrays, got %s", name, jsonKind(raw)))
		return
	}
	for i, el := range elems {
		elName := name + "[" + strconv.Itoa(i) + "]"
		var seq StopSequence
		switch jsonKind(el) {
		case "a string":
			seq.Text, e = decodeString(el, elName)
		case "an array":
			seq.IDs, e = decodeTokenIDs(el, elName, s.vocab)
			if e == nil && len(seq.IDs) == 0 {
				continue // LightLLM drops empty id lists
			}
		default:
			e = badRequest(codeInvalidType, elName, "'%s' must be a string or an array of token ids, got %s", elName, jsonKind(el))
		}
		if e == nil {
			e = s.addStop(p, seq, name)
		}
		if e != nil {
			o.fail(e)
			return
		}
	}
}

// stopTokenIDs parses vLLM's stop_token_ids: each id stops on its own.
func (s *Server) stopTokenIDs(o *object, k string, p *SamplingParams) {
	raw, ok := o.raw(k)
	if !ok {
		return
	}
	ids, e := decodeTokenIDs(raw, o.name(k), s.vocab)
	if e != nil {
		o.fail(e)
		return
	}
	for _, id := range ids {
		if e := s.addStop(p, StopSequence{IDs: []int32{id}}, o.name(k)); e != nil {
			o.fail(e)
			return
		}
	}
}

// addStop checks and appends one stop sequence; a string also gets its
// tokenization for the id matcher, as LightLLM does.
func (s *Server) addStop(p *SamplingParams, seq StopSequence, name string) *apiError {
	if len(p.StopSequences) >= maxStopSequences {
		return invalidValue(name, "at most %d stop sequences are supported", maxStopSequences)
	}
	if seq.Text != "" || seq.IDs == nil {
		switch {
		case seq.Text == "":
			return invalidValue(name, "'%s' holds an empty stop string", name)
		case len(seq.Text) > maxStopStringBytes:
			return invalidValue(name, "stop string of %d bytes, at most %d", len(seq.Text), maxStopStringBytes)
		case !utf8.ValidString(seq.Text):
			return badRequest(codeInvalidEncoding, name, "'%s' holds a stop string that is not valid UTF-8", name)
		}
		seq.IDs = s.tok.Encode(seq.Text, false)
	}
	if len(seq.IDs) > maxStopSequenceTokens {
		return invalidValue(name, "stop sequence of %d tokens, at most %d", len(seq.IDs), maxStopSequenceTokens)
	}
	p.StopSequences = append(p.StopSequences, seq)
	return nil
}

// idListField parses a list of token ids with a length limit.
func (s *Server) idListField(o *object, k string, limit int) []int32 {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	ids, e := decodeTokenIDs(raw, o.name(k), s.vocab)
	if e == nil && len(ids) > limit {
		e = invalidValue(o.name(k), "'%s' holds %d ids, at most %d", o.name(k), len(ids), limit)
	}
	if e != nil {
		o.fail(e)
		return nil
	}
	return ids
}

// logitBiasKeys parses LightLLM's native logit_bias, of which only the keys
// count: those ids are banned.
func (s *Server) logitBiasKeys(o *object, k string) []int32 {
	c := o.child(k)
	if c == nil {
		return nil
	}
	keys := c.keys()
	if len(keys) > maxBannedTokenIDs {
		o.fail(invalidValue(o.name(k), "'%s' holds %d ids, at most %d", o.name(k), len(keys), maxBannedTokenIDs))
		return nil
	}
	ids := make([]int32, 0, len(keys))
	for _, key := range keys {
		id, err := strconv.ParseInt(key, 10, 64)
		if err != nil || id < 0 || id >= int64(s.vocab) {
			o.fail(invalidValue(o.name(k), "'%s' key %q is not a token id in [0, %d)", o.name(k), key, s.vocab))
			return nil
		}
		if _, e := decodeFloat(c.fields[key], c.name(key)); e != nil {
			o.fail(e)
			return nil
		}
		ids = append(ids, int32(id))
	}
	return ids
}

// maxLogitBias is OpenAI's bound on a logit_bias value.
const maxLogitBias = 100

// openAILogitBias parses OpenAI's logit_bias: {"token id": bias in [-100,
// 100]}, any number of entries (they travel in the slot's extras). null
// and {} are no bias.
func (s *Server) openAILogitBias(o *object, k string) map[int32]float32 {
	c := o.child(k)
	if c == nil || len(c.fields) == 0 {
		return nil
	}
	name := o.name(k)
	out := make(map[int32]float32, len(c.fields))
	for _, key := range c.keys() {
		id, err := strconv.ParseInt(key, 10, 64)
		if err != nil || id < 0 || id >= int64(s.vocab) {
			o.fail(invalidValue(name, "'%s' key %q is not a token id in [0, %d)", name, key, s.vocab))
			return nil
		}
		v, e := decodeFloat(c.fields[key], name)
		if e == nil && (v < -maxLogitBias || v > maxLogitBias) {
			e = invalidValue(name, "'%s' value for token %d must be in [-%d, %d], got %g", name, id, maxLogitBias, maxLogitBias, v)
		}
		if e != nil {
			o.fail(e)
			return nil
		}
		if v != 0 {
			out[int32(id)] = float32(v)
		}
	}
	return out
}

// decayPenalty parses exponential_decay_length_penalty: [start, factor].
func decayPenalty(o *object, k string, p *SamplingParams) {
	raw, ok := o.raw(k)
	if !ok {
		return
	}
	name := o.name(k)
	var pair []json.RawMessage
	if jsonKind(raw) != "an array" || json.Unmarshal(raw, &pair) != nil || len(pair) != 2 {
		o.fail(badRequest(codeInvalidType, name, "'%s' must be [start, factor], got %s", name, jsonKind(raw)))
		return
	}
	start, e := decodeInt(pair[0], name+"[0]")
	if e == nil && (start < 0 || start > math.MaxInt32) {
		e = invalidValue(name, "'%s' start must be in [0, %d], got %d", name, math.MaxInt32, start)
	}
	var factor float64
	if e == nil {
		factor, e = decodeFloat(pair[1], name+"[1]")
	}
	if e == nil && (factor < 1 || factor > 1e6) {
		e = invalidValue(name, "'%s' factor must be in [1, 1e6], got %g", name, factor)
	}
	if e != nil {
		o.fail(e)
		return
	}
	p.DecayStart, p.DecayFactor = int(start), float32(factor)
}

// shortest64 widens a float32 parameter for echoing it in a response as
// the client wrote it (0.7, not 0.699999988079071): the shortest decimal
// that reads back as the same float32.
func shortest64(x float32) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
	return v
}

// normalize applies LightLLM's SamplingParams.init rules: no sampling, or a
// temperature below 1e-5, is greedy (top_k 1, temperature 1, top_p 1).
func normalize(p *SamplingParams) {
	if !p.DoSample {
		p.Temperature, p.TopP, p.TopK = 1, 1, 1
	}
	if p.Temperature < samplingEps {
		p.Temperature, p.TopK = 1, 1
	}
}

// lengthLimit is LightLLM's real limit on prompt + output tokens:
// min(max_total_token_num - 36, max_req_total_len).
func (s *Server) lengthLimit() int {
	limit := s.opts.MaxReqTotalLen
	if kv := s.backend.MaxTotalTokens(); kv > 0 {
		limit = min(limit, kv-lengthMargin)
	}
	return limit
}

// applyLengthRule cuts max_new_tokens so that the request fits, as
// LightLLM's _check_and_repair_length; 400 only when nothing fits. The
// error names promptName when the prompt alone is too long, else maxName.
func (s *Server) applyLengthRule(promptLen int, p *SamplingParams, maxName, promptName string) *apiError {
	if promptLen == 0 {
		return invalidValue("", "the prompt is empty (no tokens)")
	}
	limit := s.lengthLimit()
	if promptLen+p.MaxNewTokens > limit {
		cut := limit - promptLen
		if cut <= 0 && promptLen >= limit {
			return badRequest(codeContextLength, promptName,
				"the input prompt is %d tokens, and the longest request this server takes is %d tokens (prompt + output): shorten '%s'",
				promptLen, limit, promptName)
		}
		if cut <= 0 {
			return badRequest(codeContextLength, maxName,
				"the input prompt token len %d + %s %d > %d, the longest request this server takes (prompt + output tokens)",
				promptLen, maxName, p.MaxNewTokens, limit)
		}
		p.MaxNewTokens = cut
	}
	p.MinNewTokens = min(p.MinNewTokens, p.MaxNewTokens)
	return nil
}

// checkPromptChars rejects a string prompt too long to be worth tokenizing.
func (s *Server) checkPromptChars(text, name string) *apiError {
	limit := s.opts.MaxReqTotalLen * charsPerTokenBound
	if len(text) <= limit { // bytes >= characters
		return nil
	}
	if n := utf8.RuneCountInString(text); n > limit {
		return badRequest(codeContextLength, name,
			"prompt text length %d exceeds the character limit %d, the request is rejected before tokenization", n, limit)
	}
	return nil
}
