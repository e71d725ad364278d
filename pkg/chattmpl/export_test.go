package chattmpl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Used only by tests (issue 17: kept out of the shipped binaries).

// WithClock sets the clock behind strftime_now (tests pin the date).
func WithClock(now func() time.Time) Option { return func(t *Template) { t.now = now } }

// SelectTemplate picks the template source from tokenizer_config.json's
// "chat_template" value, which is either a string or a list of
// {"name": ..., "template": ...}. As HF's get_chat_template: a requested
// name wins, else "tool_use" when the request has tools, else "default".
func SelectTemplate(raw json.RawMessage, name string, hasTools bool) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", errors.New("chat template: the tokenizer config has none")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("chat template: %w", err)
		}
		if name != "" && name != "default" {
			return "", fmt.Errorf("chat template %q: the tokenizer config has a single unnamed template", name)
		}
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", fmt.Errorf("chat template: want a string or a list of {name, template}: %w", err)
	}
	byName := map[string]string{}
	for _, t := range list {
		byName[t.Name] = t.Template
	}
	switch {
	case name != "":
		if s, ok := byName[name]; ok {
			return s, nil
		}
		return "", fmt.Errorf("chat template %q: not among the tokenizer config's templates", name)
	case hasTools && byName["tool_use"] != "":
		return byName["tool_use"], nil
	case byName["default"] != "":
		return byName["default"], nil
	}
	return "", errors.New("chat template: the model has several templates and none is named default")
}
