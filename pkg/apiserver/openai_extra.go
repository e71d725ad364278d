package apiserver

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"sync"
)

// Unknown fields on the OpenAI endpoints are ignored with a warning, as
// vLLM does: clients and proxies written for vLLM or for newer OpenAI APIs
// send fields this server has never heard of (verbosity,
// stream_options.include_obfuscation, ...). The native API stays strict.
// Fields vLLM knows and this server cannot honour are different: ignoring
// them would silently change the answer, so they are refused by name unless
// they hold their "off" value.

// maxWarnedFields bounds the field names remembered for the one-warning-per-
// name rule (client-chosen names must not grow memory without bound); past
// it further unknown names are ignored without a warning.
const maxWarnedFields = 512

// fieldWarner logs one warning per unknown field name.
type fieldWarner struct {
	mu   sync.Mutex
	seen map[string]bool
}

// first reports whether name is seen for the first time (and remembers it).
func (w *fieldWarner) first(name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if w.seen[name] || len(w.seen) >= maxWarnedFields {
		return false
	}
	w.seen[name] = true
	return true
}

// isOff reports whether raw is null, false, 0, "", [] or {}, or equals off.
func isOff(raw json.RawMessage, off string) bool {
	t := string(bytes.TrimSpace(raw))
	switch t {
	case "null", "false", `""`, "[]", "{}":
		return true
	}
	if v, err := strconv.ParseFloat(t, 64); err == nil {
		if off != "" {
			o, _ := strconv.ParseFloat(off, 64)
			return v == o
		}
		return v == 0
	}
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) == nil && len(elems) == 0 {
		return true
	}
	var fields map[string]json.RawMessage
	return json.Unmarshal(raw, &fields) == nil && len(fields) == 0
}

// ignoreUnknown is the OpenAI endpoints' rejectUnknown: a field not in
// allowed is refused when vLLM defines it and it is not off, and otherwise
// ignored with one warning per field name.
func (s *Server) ignoreUnknown(o *object, allowed map[string]bool, path string) {
	for _, k := range o.keys() {
		if allowed[k] {
			continue
		}
		name := o.name(k)
		if off, ok := vllmUnsupported[k]; ok && o.prefix == "" {
			if !isOff(o.fields[k], off) {
				o.fail(unsupported(name, "'%s' is not supported by this server (send it unset, or with its default, to run without it)", name))
				return
			}
			continue
		}
		if s.unknownFields.first(name) {
			s.log.Warn().Str("field", name).Str("path", path).
				Msg("ignoring an unknown request field (this warning is logged once per field name)")
		}
	}
}

// openAISeed maps OpenAI's seed, any int64, onto the backend's seeds
// (>= 0; -1 means random there): a negative seed keeps its low 63 bits, so
// it is reproducible and distinct from every other negative seed.
func openAISeed(v int64) int64 {
	if v >= 0 {
		return v
	}
	return v & math.MaxInt64
}

// The OpenAI endpoints' paths, for logs.
const (
	pathCompletions = "/v1/completions"
	pathChat        = "/v1/chat/completions"
)

// strictModel: a request naming a model this server does not serve gets
// 404 model_not_found. It holds when the operator named the model
// (--served_model_name, as vLLM) or asked for it; otherwise the name is
// ignored, as LightLLM does.
func (s *Server) strictModel() bool {
	return s.opts.StrictModelName || len(s.opts.ServedModelNames) > 0
}

// serves reports whether name is one of the served model names.
func (s *Server) serves(name string) bool {
	for _, n := range s.served {
		if n == name {
			return true
		}
	}
	return false
}

// servedList names the served models for error messages.
func (s *Server) servedList() string {
	out := ""
	for i, n := range s.served {
		if i > 0 {
			out += ", "
		}
		out += "`" + n + "`"
	}
	return out
}
