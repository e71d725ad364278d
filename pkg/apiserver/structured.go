package apiserver

import (
	"encoding/json"

	"github.com/lightllm-go/lightllm/pkg/constrain"
	"github.com/lightllm-go/lightllm/pkg/grammar"
)

// Constraint restricts what a request's answer may be: infer masks the
// tokens it samples to those the grammar allows (pkg/constrain). It applies
// to the answer only: Trigger and the thinking flags say where that starts.
type Constraint struct {
	constrain.Spec

	param string // the request field it came from, for errors
}

func newConstraint(g grammar.Spec) *Constraint { return &Constraint{Spec: constrain.Spec{Grammar: g}} }

// structuredFields are the constraint fields both OpenAI endpoints take
// besides response_format: vLLM's extra parameters.
var structuredFields = []string{"guided_json", "guided_regex", "guided_grammar", "guided_choice",
	"guided_decoding_backend", "guided_whitespace_pattern"}

// openAIConstraint reads response_format and vLLM's guided_* fields; nil
// when the answer is free text. Two constraints in one request are refused.
func openAIConstraint(o *object) *Constraint {
	var c *Constraint
	set := func(name string, nc *Constraint) {
		if nc == nil || o.err != nil {
			return
		}
		if c != nil {
			o.fail(invalidValue(name, "'%s' conflicts with another structured output field: give one constraint per request", name))
			return
		}
		c = nc
		c.param = name
	}
	if rf := o.child("response_format"); rf != nil {
		set("response_format", responseFormat(rf))
		o.fail(rf.err)
	}
	set("guided_json", guidedJSON(o, "guided_json"))
	if v := o.str("guided_regex"); v != nil {
		set("guided_regex", newConstraint(grammar.Spec{Kind: grammar.KindRegex, Text: *v}))
	}
	if v := o.str("guided_grammar"); v != nil {
		set("guided_grammar", newConstraint(grammar.Spec{Kind: grammar.KindGBNF, Text: *v}))
	}
	set("guided_choice", guidedChoice(o, "guided_choice"))
	// vLLM picks its backend with this; there is one engine here, and every
	// backend name means the same constraint, so any value is accepted.
	o.str("guided_decoding_backend")
	if v := o.str("guided_whitespace_pattern"); v != nil {
		o.fail(unsupported("guided_whitespace_pattern", "'guided_whitespace_pattern' is not supported: JSON whitespace is fixed by the grammar engine"))
	}
	return c
}

// responseFormat reads OpenAI's response_format.
func responseFormat(rf *object) *Constraint {
	t := rf.str("type")
	if rf.err != nil {
		return nil
	}
	if t == nil {
		rf.fail(badRequest(codeMissing, "response_format.type", "'response_format.type' is required"))
		return nil
	}
	switch *t {
	case "text":
		rf.rejectUnknown(setOf("type"))
		return nil
	case "json_object":
		rf.rejectUnknown(setOf("type"))
		return newConstraint(grammar.Spec{Kind: grammar.KindJSONObject})
	case "json_schema":
		rf.rejectUnknown(setOf("type", "json_schema"))
		js := rf.child("json_schema")
		if rf.err != nil {
			return nil
		}
		if js == nil {
			rf.fail(badRequest(codeMissing, "response_format.json_schema", "'response_format.json_schema' is required for type \"json_schema\""))
			return nil
		}
		js.rejectUnknown(setOf("name", "description", "schema", "strict"))
		name := js.str("name")
		js.str("description")
		// strict: true asks that the output always match the schema; this
		// server enforces every schema it accepts and refuses the rest
		// (naming the keyword), so strict and non-strict schemas are
		// treated alike.
		js.boolean("strict")
		schema, ok := js.raw("schema")
		switch {
		case js.err != nil:
		case name == nil:
			js.fail(badRequest(codeMissing, "response_format.json_schema.name", "'response_format.json_schema.name' is required"))
		case !toolNameRE.MatchString(*name):
			js.fail(invalidValue("response_format.json_schema.name", "'response_format.json_schema.name' must be 1-64 letters, digits, '_' or '-', got %q", *name))
		case !ok:
			schema = json.RawMessage(`{}`) // OpenAI: no schema means any JSON value
		case jsonKind(schema) != "an object" && jsonKind(schema) != "a boolean":
			js.fail(badRequest(codeInvalidType, "response_format.json_schema.schema", "'response_format.json_schema.schema' must be a JSON Schema (an object), got %s", jsonKind(schema)))
		}
		if js.err != nil {
			rf.fail(js.err)
			return nil
		}
		return newConstraint(grammar.Spec{Kind: grammar.KindJSONSchema, Text: string(schema)})
	}
	rf.fail(invalidValue("response_format.type", "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", got %q", *t))
	return nil
}

// guidedJSON reads a schema given as an object or as a string holding one
// (vLLM accepts both; LightLLM's guided_json is a string).
func guidedJSON(o *object, k string) *Constraint {
	raw, ok := o.raw(k)
	if !ok {
		return nil
	}
	switch jsonKind(raw) {
	case "an object":
		return newConstraint(grammar.Spec{Kind: grammar.KindJSONSchema, Text: string(raw)})
	case "a string":
		s, e := decodeString(raw, o.name(k))
		if e != nil {
			o.fail(e)
			return nil
		}
		if s == "" { // LightLLM's "off"
			return nil
		}
		if !json.Valid([]byte(s)) || jsonKind([]byte(s)) != "an object" {
			o.fail(badRequest(codeInvalidJSON, o.name(k), "'%s' must be a JSON Schema object (or a string holding one)", o.name(k)))
			return nil
		}
		return newConstraint(grammar.Spec{Kind: grammar.KindJSONSchema, Text: s})
	}
	o.typeError(k, "a JSON Schema object or a string holding one", raw)
	return nil
}

// guidedChoice reads vLLM's guided_choice: the answer is one of the strings.
func guidedChoice(o *object, k string) *Constraint {
	elems := o.array(k)
	if elems == nil {
		return nil
	}
	if len(elems) == 0 {
		o.fail(invalidValue(o.name(k), "'%s' must hold at least one choice", o.name(k)))
		return nil
	}
	alts := make([]string, len(elems))
	for i, el := range elems {
		s, e := decodeString(el, o.name(k))
		if e != nil {
			o.fail(e)
			return nil
		}
		alts[i] = s
	}
	return newConstraint(grammar.Spec{Kind: grammar.KindChoice, Choices: alts})
}

// nativeConstraint reads LightLLM's regular_constraint, guided_grammar and
// guided_json (strings; "" is off).
func nativeConstraint(o *object) *Constraint {
	var c *Constraint
	for _, k := range []string{"regular_constraint", "guided_grammar", "guided_json"} {
		var nc *Constraint
		switch k {
		case "guided_json":
			nc = guidedJSON(o, k)
		default:
			if v := o.str(k); v != nil && *v != "" {
				nc = newConstraint(grammar.Spec{Kind: grammar.KindRegex, Text: *v})
				if k == "guided_grammar" {
					nc.Grammar.Kind = grammar.KindGBNF
				}
			}
		}
		if nc == nil || o.err != nil {
			continue
		}
		if c != nil {
			o.fail(invalidValue(o.name(k), "'%s' conflicts with another constraint: give one per request", o.name(k)))
			return nil
		}
		c = nc
		c.param = o.name(k)
	}
	return c
}

// checkConstraint refuses a constraint the grammar engine cannot enforce
// (a 400 naming the field and what it cannot do).
func (s *Server) checkConstraint(c *Constraint, p *SamplingParams) *apiError {
	if c == nil {
		return nil
	}
	param := c.param
	if param == "" {
		param = "tools"
	}
	// The grammar ends the answer with EOS: a request that forbids or
	// delays EOS could be left with no token to sample.
	switch {
	case p.IgnoreEOS:
		return invalidValue("ignore_eos", "'ignore_eos' cannot be combined with '%s': the constraint ends the answer with EOS", param)
	case p.MinNewTokens > 1:
		return invalidValue("min_tokens", "a minimum number of new tokens cannot be combined with '%s': the constraint decides where the answer ends", param)
	}
	if s.opts.CheckConstraint == nil {
		return unsupported(param, "'%s' needs constrained decoding, which this server was started without", param)
	}
	if err := s.opts.CheckConstraint(c); err != nil {
		return invalidValue(param, "'%s' cannot be enforced: %v", param, err)
	}
	return nil
}

// GrammarCheck is an Options.CheckConstraint that compiles constraints
// with the grammar engine, through cache (the compiled grammar is then
// ready when infer asks the same cache, in the same process, for it).
func GrammarCheck(cache *grammar.Cache, opts grammar.Options) func(*Constraint) error {
	return func(c *Constraint) error {
		_, err := cache.Compile(c.Grammar, opts)
		return err
	}
}
