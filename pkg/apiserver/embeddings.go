package apiserver

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
)

// OpenAI's /v1/embeddings (and vLLM's, for an embedding model): input is a
// string, an array of strings, an array of token ids or an array of token
// id arrays; each input is one embedding request through the request path
// (a group whose slot asks for the pooled final hidden state and never
// decodes); the answer is {"object":"list","data":[{"object":"embedding",
// "index","embedding"}],"model","usage":{"prompt_tokens","total_tokens"}}
// with the vectors as float arrays or, for encoding_format "base64",
// little-endian float32 bytes in base64 (what the OpenAI clients decode).

// EmbeddingOptions say whether and how the server embeds.
type EmbeddingOptions struct {
	// Dim is the vectors' length (the model's hidden size); 0: embeddings
	// are not served, and Unavailable says why (the 400's message).
	Dim         int
	Unavailable string
}

// maxEmbeddingInputs is OpenAI's limit on inputs per request.
const maxEmbeddingInputs = 2048

// embedWindow is how many inputs of one request are in flight at once, so
// that a large batch queues in the request path's order rather than
// taking every slot (or being refused as overload).
const embedWindow = 16

var embeddingFields = setOf("model", "input", "encoding_format", "dimensions", "user", "add_special_tokens")

type embeddingData struct {
	Object    string `json:"object"`
	Index     int    `json:"index"`
	Embedding any    `json:"embedding"` // []float32 or a base64 string
}

type embeddingUsage struct {
	PromptTokens int `json:"prompt_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

type embeddingResponse struct {
	Object string          `json:"object"`
	Data   []embeddingData `json:"data"`
	Model  string          `json:"model"`
	Usage  embeddingUsage  `json:"usage"`
}

type embeddingRequest struct {
	model      string
	inputs     [][]int32
	base64     bool
	addSpecial bool
}

func (s *Server) parseEmbedding(o *object) (*embeddingRequest, *apiError) {
	s.ignoreUnknown(o, embeddingFields, "/v1/embeddings")
	s.checkModelField(o)
	req := &embeddingRequest{addSpecial: true}
	if v := o.str("model"); v != nil {
		req.model = *v
	}
	if v := o.str("encoding_format"); v != nil {
		switch *v {
		case "float":
		case "base64":
			req.base64 = true
		default:
			o.fail(invalidValue("encoding_format", "'encoding_format' must be \"float\" or \"base64\", got %q", *v))
		}
	}
	if v := o.integer("dimensions"); v != nil && *v != int64(s.opts.Embeddings.Dim) {
		d := s.opts.Embeddings.Dim
		o.fail(unsupported("dimensions", "'dimensions' %d is not supported: this model's embeddings have %d dimensions and are not truncated (omit it or pass %d)", *v, d, d))
	}
	if v := o.boolean("add_special_tokens"); v != nil {
		req.addSpecial = *v
	}
	_ = o.str("user")
	if o.err != nil {
		return nil, o.err
	}
	raw, ok := o.raw("input")
	if !ok {
		return nil, badRequest(codeMissing, "input", "'input' is required: a string, an array of strings, an array of token ids or an array of token id arrays")
	}
	if e := s.embeddingInputs(raw, req); e != nil {
		return nil, e
	}
	limit := s.lengthLimit()
	for i, ids := range req.inputs {
		if len(ids) > limit {
			return nil, &apiError{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: codeContextLength, Param: "input",
				Message: "input " + strconv.Itoa(i) + " has " + strconv.Itoa(len(ids)) + " tokens, more than this model's maximum of " +
					strconv.Itoa(limit) + " tokens"}
		}
	}
	return req, nil
}

// embeddingInputs reads input: str | [str] | [int] | [[int]], none empty.
func (s *Server) embeddingInputs(raw json.RawMessage, req *embeddingRequest) *apiError {
	addText := func(text, name string) *apiError {
		if text == "" {
			return invalidValue(name, "'%s' cannot be an empty string", name)
		}
		if e := s.checkPromptChars(text, name); e != nil {
			return e
		}
		req.inputs = append(req.inputs, s.tok.Encode(text, req.addSpecial))
		return nil
	}
	addIDs := func(el json.RawMessage, name string) *apiError {
		ids, e := decodeTokenIDs(el, name, s.vocab)
		if e != nil {
			return e
		}
		if len(ids) == 0 {
			return invalidValue(name, "'%s' cannot be an empty array of token ids", name)
		}
		req.inputs = append(req.inputs, ids)
		return nil
	}
	return promptForms(raw, "input", maxEmbeddingInputs, addText, addIDs)
}

func (s *Server) handleEmbeddings(w http.ResponseWriter, r *http.Request) {
	o, e := s.readObject(w, r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if s.opts.Embeddings.Dim <= 0 {
		msg := s.opts.Embeddings.Unavailable
		if msg == "" {
			msg = "this server does not serve embeddings"
		}
		s.writeError(w, r, badRequest(codeUnsupported, "model", "%s", msg))
		return
	}
	req, e := s.parseEmbedding(o)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	resp := embeddingResponse{Object: "list", Data: make([]embeddingData, len(req.inputs)),
		Model: s.responseModel(&openAIRequest{model: req.model})}
	rid := requestIDFrom(r.Context())
	for start := 0; start < len(req.inputs); start += embedWindow {
		end := min(start+embedWindow, len(req.inputs))
		runs := make([]*run, 0, end-start)
		closeAll := func() {
			for _, rn := range runs {
				rn.close()
			}
		}
		for _, ids := range req.inputs[start:end] {
			p := s.defaultParams(true)
			p.Embed, p.MaxNewTokens, p.MinNewTokens = true, 0, 0
			normalize(&p)
			rn, e := s.submit(r.Context(), r.URL.Path, &Group{RequestID: rid, Prompt: ids, N: 1, Params: p})
			if rn == nil {
				closeAll()
				if e != nil {
					s.writeError(w, r, e)
				}
				return
			}
			runs = append(runs, rn)
		}
		for k, rn := range runs {
			vec, e := s.embedResult(r, rn)
			if e != nil {
				closeAll()
				s.writeError(w, r, e)
				return
			}
			i := start + k
			resp.Data[i] = embeddingData{Object: "embedding", Index: i, Embedding: vec}
			if req.base64 {
				resp.Data[i].Embedding = base64Floats(vec)
			}
			resp.Usage.PromptTokens += len(req.inputs[i])
		}
		closeAll()
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	writeJSON(w, http.StatusOK, resp)
}

// embedResult waits for one embedding request's finish event.
func (s *Server) embedResult(r *http.Request, rn *run) ([]float32, *apiError) {
	var vec []float32
	var fail *apiError
	for {
		ev, ok, err := rn.next(r.Context())
		if err != nil {
			return nil, s.asAPIError(err)
		}
		if !ok {
			break
		}
		if ev.Finished {
			switch {
			case ev.Reason == FinishError || ev.Reason == FinishAbort:
				msg := "the embedding request ended with " + string(ev.Reason)
				if ev.Err != "" {
					msg += ": " + ev.Err
				}
				fail = internalError(msg)
				fail.observed = true
			case len(ev.Embedding) != s.opts.Embeddings.Dim:
				fail = internalError("the backend returned an embedding of " + strconv.Itoa(len(ev.Embedding)) +
					" floats for a model of " + strconv.Itoa(s.opts.Embeddings.Dim) + " dimensions")
			default:
				vec = ev.Embedding
			}
		}
	}
	if fail == nil && vec == nil {
		fail = internalError("the embedding request ended without a vector")
	}
	return vec, fail
}

// base64Floats is OpenAI's base64 encoding_format: the float32 values'
// little-endian bytes.
func base64Floats(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}
