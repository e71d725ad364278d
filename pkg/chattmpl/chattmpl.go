// Package chattmpl renders a model's Jinja chat template byte for byte as
// Hugging Face transformers does (Python jinja2, ImmutableSandboxedEnvironment
// with trim_blocks and lstrip_blocks, HF's tojson, raise_exception and
// strftime_now).
//
// Templates are compiled with github.com/ardanlabs/jinja; translate() (lex.go)
// bridges the places where that library and jinja2 differ, and pyfmt.go
// supplies Python's formatting of values.
package chattmpl

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// RaisedError is what a template's raise_exception("...") produces, e.g.
// "Conversation roles must alternate user/assistant/user/assistant/...".
type RaisedError struct{ Message string }

func (e *RaisedError) Error() string { return "chat template raised: " + e.Message }

// ErrInternal marks a render that hit a bug (a panic) in the engine rather
// than a problem with the template or the context.
var ErrInternal = errors.New("chat template engine internal error")

// Template is a compiled chat template; it is safe for concurrent use.
type Template struct {
	src string
	lib *jinja.Template
	now func() time.Time
}

// Option configures a Template.
type Option func(*Template)

// New compiles a chat template source (tokenizer_config.json's chat_template).
func New(src string, opts ...Option) (*Template, error) {
	tr, err := translate(src)
	if err != nil {
		return nil, fmt.Errorf("compile chat template: %w", err)
	}
	lib, err := compileLib(tr)
	if err != nil {
		return nil, fmt.Errorf("compile chat template: %w", &SyntaxError{Line: 0, Msg: err.Error()})
	}
	t := &Template{src: src, lib: lib, now: time.Now}
	for _, o := range opts {
		o(t)
	}
	return t, nil
}

func compileLib(src string) (tmpl *jinja.Template, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: compile: %v", ErrInternal, r)
		}
	}()
	return jinja.Compile(src)
}

// Source returns the template source as given to New.
func (t *Template) Source() string { return t.src }

// Render renders with ctx as the template's variables (messages, tools,
// add_generation_prompt, bos_token, ...). Values may be *Map, []any, string,
// bool, numbers, json.Number, json.RawMessage, Message and []Message.
func (t *Template) Render(ctx *Map) (string, error) {
	data := make(map[string]jinja.Value, ctx.Len()+8)
	for _, k := range ctx.Keys() {
		v, _ := ctx.Get(k)
		jv, err := toValue(v, 0)
		if err != nil {
			return "", fmt.Errorf("render chat template: context %q: %w", k, err)
		}
		data[k] = jv
	}
	t.addGlobals(data)
	return t.render(data)
}

// RenderJSON renders with a JSON object as the context; key order is kept.
func (t *Template) RenderJSON(ctx []byte) (string, error) {
	var m Map
	if err := m.UnmarshalJSON(ctx); err != nil {
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return t.Render(&m)
}

// RenderMessages renders a conversation the way apply_chat_template does:
// messages and add_generation_prompt, then extra's entries (tools,
// bos_token, eos_token, enable_thinking, ...). extra may be nil.
func (t *Template) RenderMessages(messages []Message, addGenerationPrompt bool, extra *Map) (string, error) {
	ctx := NewMap().Set("messages", messages).Set("add_generation_prompt", addGenerationPrompt)
	for _, k := range extra.Keys() {
		v, _ := extra.Get(k)
		ctx.Set(k, v)
	}
	return t.Render(ctx)
}

func (t *Template) render(data map[string]jinja.Value) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("%w: render: %v", ErrInternal, r)
		}
	}()
	out, err = t.lib.RenderValues(data)
	if err != nil {
		var raised *RaisedError
		if errors.As(err, &raised) {
			return "", raised
		}
		return "", fmt.Errorf("render chat template: %w", err)
	}
	return out, nil
}

// addGlobals installs HF's globals (unless the context shadows them, as a
// jinja2 context variable would) and the helpers translate() refers to.
func (t *Template) addGlobals(data map[string]jinja.Value) {
	setDefault := func(name string, v jinja.Value) {
		if _, ok := data[name]; !ok {
			data[name] = v
		}
	}
	setDefault("raise_exception", jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := ""
		if len(args) > 0 {
			s, err := pyStr(args[0])
			if err != nil {
				return jinja.Undefined(), err
			}
			msg = s
		}
		return jinja.Undefined(), &RaisedError{Message: msg}
	}))
	setDefault("strftime_now", jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now() takes one format string")
		}
		return jinja.NewString(strftime(args[0].AsString(), t.now())), nil
	}))
	setDefault("range", jinja.NewCallable("range", pyRange))
	data[varWS] = jinja.NewString(pyWhitespace)
	data[fnMul] = jinja.NewCallable("mul", pyMul)
	data[fnList] = jinja.NewCallable("list", filterList)
	data[fnJoin] = jinja.NewCallable("join", filterJoin)
	data[fnStr] = jinja.NewCallable("string", filterStr)
	data[fnTrim] = jinja.NewCallable("trim", filterTrim)
	data[fnToJSON] = jinja.NewCallable("tojson", filterToJSON)
	addTruthFilters(data)
}

func filterStr(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	s, err := pyStr(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(s), nil
}

// filterTrim is jinja2's do_trim: str(value).strip(chars).
func filterTrim(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.NewString(""), nil
	}
	s, err := pyStr(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	chars := jinja.None()
	if len(args) > 1 {
		chars = args[1]
	}
	if c, ok := kwargs["chars"]; ok {
		chars = c
	}
	switch {
	case chars.IsNone() || chars.IsUndefined():
		return jinja.NewString(pyStrip(s, true, true)), nil
	case chars.IsString():
		return jinja.NewString(trimCutset(s, chars.AsString())), nil
	}
	return jinja.Undefined(), errors.New("trim: chars must be a string or None")
}

func trimCutset(s, cut string) string {
	// strings.Trim with a cutset is Python's strip(chars) (a set of code
	// points), except that an empty cutset must strip nothing.
	if cut == "" {
		return s
	}
	return strings.Trim(s, cut)
}

// filterToJSON is HF's tojson: json.dumps(x, ensure_ascii=False,
// indent=indent, separators=separators, sort_keys=False).
func filterToJSON(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) == 0 {
		return jinja.Undefined(), errors.New("tojson: missing value")
	}
	names := []string{"ensure_ascii", "indent", "separators", "sort_keys"}
	opt := map[string]jinja.Value{}
	for i, a := range args[1:] {
		if i >= len(names) {
			return jinja.Undefined(), errors.New("tojson: too many arguments")
		}
		opt[names[i]] = a
	}
	for k, v := range kwargs {
		opt[k] = v
	}
	o := jsonOpts{itemSep: ", ", keySep: ": "}
	if v, ok := opt["ensure_ascii"]; ok {
		o.ensureASCII = v.IsTruthy()
	}
	if v, ok := opt["sort_keys"]; ok {
		o.sortKeys = v.IsTruthy()
	}
	if v, ok := opt["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		var ind string
		switch {
		case v.IsInt():
			for range max(v.AsInt(), 0) {
				ind += " "
			}
		case v.IsString():
			ind = v.AsString()
		default:
			return jinja.Undefined(), errors.New("tojson: indent must be an int or a string")
		}
		if len(ind) > 256 {
			return jinja.Undefined(), errors.New("tojson: indent too large")
		}
		o.indent = &ind
		o.itemSep = ","
	}
	if v, ok := opt["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Items[0].IsString() || !v.AsList().Items[1].IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be two strings")
		}
		o.itemSep = v.AsList().Items[0].AsString()
		o.keySep = v.AsList().Items[1].AsString()
	}
	s, err := pyJSONDumps(args[0], o)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("tojson: %w", err)
	}
	return jinja.NewString(s), nil
}
