package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Config is what tokenizer_config.json says about special tokens and the
// chat template. Nil flags mean "not set".
type Config struct {
	AddBOS, AddEOS *bool
	BOSToken       string
	EOSToken       string
	UNKToken       string
	PADToken       string
	ChatTemplate   string
	TokenizerClass string
}

type hfConfigFile struct {
	AddBOSToken    *bool           `json:"add_bos_token"`
	AddEOSToken    *bool           `json:"add_eos_token"`
	BOSToken       json.RawMessage `json:"bos_token"`
	EOSToken       json.RawMessage `json:"eos_token"`
	UNKToken       json.RawMessage `json:"unk_token"`
	PADToken       json.RawMessage `json:"pad_token"`
	ChatTemplate   json.RawMessage `json:"chat_template"`
	TokenizerClass string          `json:"tokenizer_class"`
}

// ParseConfig parses tokenizer_config.json.
func ParseConfig(data []byte) (Config, error) {
	var f hfConfigFile
	if err := json.Unmarshal(data, &f); err != nil {
		return Config{}, fmt.Errorf("tokenizer_config: %w", err)
	}
	cfg := Config{AddBOS: f.AddBOSToken, AddEOS: f.AddEOSToken, TokenizerClass: f.TokenizerClass}
	for _, x := range []struct {
		raw json.RawMessage
		dst *string
		key string
	}{{f.BOSToken, &cfg.BOSToken, "bos_token"}, {f.EOSToken, &cfg.EOSToken, "eos_token"},
		{f.UNKToken, &cfg.UNKToken, "unk_token"}, {f.PADToken, &cfg.PADToken, "pad_token"}} {
		s, err := tokenString(x.raw)
		if err != nil {
			return Config{}, fmt.Errorf("tokenizer_config %s: %w", x.key, err)
		}
		*x.dst = s
	}
	tmpl, err := parseChatTemplate(f.ChatTemplate)
	if err != nil {
		return Config{}, fmt.Errorf("tokenizer_config chat_template: %w", err)
	}
	cfg.ChatTemplate = tmpl
	return cfg, nil
}

// tokenString reads a token given as "text", {"content": "text", ...} or null.
func tokenString(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", errors.New("neither a string nor an added-token object")
	}
	return obj.Content, nil
}

// parseChatTemplate accepts a string or a list of {name, template}; from a
// list it takes "default" (else the first).
func parseChatTemplate(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return "", errors.New("neither a string nor a list of {name, template}")
	}
	for _, e := range list {
		if e.Name == "default" {
			return e.Template, nil
		}
	}
	if len(list) > 0 {
		return list[0].Template, nil
	}
	return "", nil
}

// readConfig loads tokenizer_config.json from dir (absent → empty), and the
// chat template from chat_template.jinja / chat_template.json when the
// config has none (newer transformers save it there).
func readConfig(dir string) (Config, error) {
	var cfg Config
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if cfg, err = ParseConfig(data); err != nil {
			return Config{}, fmt.Errorf("load %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return Config{}, fmt.Errorf("load tokenizer config: %w", err)
	}
	if cfg.ChatTemplate != "" {
		return cfg, nil
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
		cfg.ChatTemplate = string(b)
		return cfg, nil
	}
	if b, err := os.ReadFile(filepath.Join(dir, "chat_template.json")); err == nil {
		var f struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			return Config{}, fmt.Errorf("load %s: %w", filepath.Join(dir, "chat_template.json"), err)
		}
		if cfg.ChatTemplate, err = parseChatTemplate(f.ChatTemplate); err != nil {
			return Config{}, fmt.Errorf("load %s: %w", filepath.Join(dir, "chat_template.json"), err)
		}
	}
	return cfg, nil
}

// usesConfigFlags says whether transformers rebuilds the post-processor from
// add_bos_token/add_eos_token for this tokenizer class (LlamaTokenizerFast
// and its relatives do; generic fast tokenizers keep tokenizer.json's).
func usesConfigFlags(class string) bool {
	c := strings.TrimSuffix(class, "Fast")
	switch c {
	case "LlamaTokenizer", "CodeLlamaTokenizer", "GemmaTokenizer", "LlamaTokenizerFast":
		return true
	}
	return false
}
