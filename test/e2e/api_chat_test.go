package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lightllm-go/lightllm/pkg/tokenizer"
)

// testChatAndUTF8 launches the server on a copy of stories260K's directory
// (weights linked, not copied) that differs in two ways:
//
//   - a chat template (chat_template.jinja), which stories260K lacks, so the
//     chat endpoint is exercised for real, streamed and not, with logprobs;
//   - a tokenizer.json in which some ids the model emits greedily from BOS
//     swap names with byte-fallback pieces <0xXX>. The weights are untouched,
//     so the model still writes llama.cpp's golden ids, but those ids now
//     decode to the UTF-8 bytes of an emoji, CJK characters and two-byte
//     letters, one byte per token. Streaming them makes the detokenizer (its
//     own process) hold back every incomplete character until its last byte
//     arrives, which is what the test checks: no event ever carries U+FFFD or
//     half a character, the pieces add up to the full decode, and the events
//     inside a character are empty.
func testChatAndUTF8(t *testing.T, bin, models string, gold apiGolden) {
	const window = 100 // golden tokens the UTF-8 stream covers
	dir, chars := utf8ModelDir(t, filepath.Join(models, "stories260K", "hf"), gold.Tokens[:window])
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := launch(t, bin, dir)
	c := newAPIClient(t, s.base)

	t.Run("chat", func(t *testing.T) { testChat(t, c, tok, gold) })
	t.Run("min_p", func(t *testing.T) { testMinP(t, c, c) })
	t.Run("utf8 stream", func(t *testing.T) { testUTF8Stream(t, c, tok, gold.Tokens[:window], chars) })
	t.Run("openai client", func(t *testing.T) { runOpenAIClientCheck(t, s.base, "--require-chat") })
}

// chatTemplate renders the messages' contents after BOS, so that a user
// message "Once upon a time" is the golden run's prompt.
const chatTemplate = "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'system' %}{{ m['content'] }} " +
	"{% else %}{{ m['content'] }}{% endif %}{% endfor %}"

// utf8Char is a character spelt by consecutive golden tokens.
type utf8Char struct {
	start int // its first byte's position in the golden window
	char  string
}

// utf8ModelDir builds the modified model directory (see TestAPIChatAndUTF8)
// for the golden token window ids and returns it with the characters spelt.
func utf8ModelDir(t *testing.T, src string, ids []int32) (string, []utf8Char) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "stories260K-utf8")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"config.json", "generation_config.json", "model.safetensors", "tokenizer_config.json"} {
		if err := os.Symlink(filepath.Join(src, f), filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(chatTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tj map[string]any
	if err := dec.Decode(&tj); err != nil {
		t.Fatal(err)
	}
	model, _ := tj["model"].(map[string]any)
	vocab, _ := model["vocab"].(map[string]any)
	if vocab == nil {
		t.Fatal("tokenizer.json has no model.vocab")
	}
	piece := map[int32]string{}
	for p, v := range vocab {
		n, err := v.(json.Number).Int64()
		if err != nil {
			t.Fatal(err)
		}
		piece[int32(n)] = p
	}

	// Tokens that occur once in the window, are ordinary pieces (not
	// special, not bytes) and not in "Once upon a time": relabelling them
	// changes nothing else the tests decode.
	count := map[int32]int{}
	for _, id := range ids {
		count[id]++
	}
	eligible := func(i int) bool {
		id := ids[i]
		return count[id] == 1 && id >= 3+256 && !strings.Contains("▁Once ▁upon ▁a ▁time", piece[id])
	}
	candidates := map[int][]string{
		4: {"😀", "🐱", "🚀"},
		3: {"猫", "日", "你", "雪", "本", "語", "中", "文"},
		2: {"é", "ж", "Ω", "λ", "ß", "ø"},
	}
	used := map[byte]bool{}
	take := func(n int) string {
		for _, ch := range candidates[n] {
			b := []byte(ch)
			free := true
			for _, x := range b {
				free = free && !used[x]
			}
			if free {
				for _, x := range b {
					used[x] = true
				}
				return ch
			}
		}
		return ""
	}
	var chars []utf8Char
	for i := 0; i < len(ids); {
		run := 0
		for i+run < len(ids) && eligible(i+run) {
			run++
		}
		if run < 2 {
			i++
			continue
		}
		for run >= 2 {
			n := min(run, 4)
			ch := take(n)
			for ch == "" && n > 2 {
				n--
				ch = take(n)
			}
			if ch == "" {
				break
			}
			for k, b := range []byte(ch) {
				g, byteID := ids[i+k], int32(3)+int32(b)
				pg, pb := piece[g], piece[byteID]
				if pb != fmt.Sprintf("<0x%02X>", b) {
					t.Fatalf("id %d is %q, not the byte piece <0x%02X>", byteID, pb, b)
				}
				vocab[pg], vocab[pb] = json.Number(fmt.Sprint(byteID)), json.Number(fmt.Sprint(g))
			}
			chars = append(chars, utf8Char{start: i, char: ch})
			i, run = i+n, run-n
		}
		i += run
	}
	widths := map[int]bool{}
	for _, ch := range chars {
		widths[len(ch.char)] = true
	}
	if !widths[4] || !widths[3] || !widths[2] {
		t.Fatalf("the golden window spells only %v: the fixture changed?", chars)
	}
	out, err := json.Marshal(tj)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, chars
}

// apiChat is a chat completion (or chunk).
type apiChat struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Choices []struct {
		Index   int `json:"index"`
		Message *struct {
			Role             string  `json:"role"`
			Content          string  `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
		} `json:"message"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Logprobs *struct {
			Content []struct {
				Token       string  `json:"token"`
				Logprob     float64 `json:"logprob"`
				Bytes       []byte  `json:"bytes"`
				TopLogprobs []struct {
					Token   string  `json:"token"`
					Logprob float64 `json:"logprob"`
				} `json:"top_logprobs"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Completion int `json:"completion_tokens"`
		Total      int `json:"total_tokens"`
	} `json:"usage"`
}

func testChat(t *testing.T, c *apiClient, tok *tokenizer.Tokenizer, gold apiGolden) {
	const n = 40
	// The template renders "<s>Once upon a time": the golden run's prompt,
	// so the answer is the golden continuation (decoded by this directory's
	// tokenizer: its window spells the characters above).
	full := tok.Decode(gold.Tokens[:4+n], true)
	want := strings.TrimPrefix(full, tok.Decode(gold.Tokens[:4], true))
	if want == full {
		t.Fatalf("decoded golden text %q does not start with its prompt", full)
	}
	for _, msgs := range [][]map[string]any{
		{{"role": "user", "content": "Once upon a time"}},
		{{"role": "system", "content": "Once upon"}, {"role": "user", "content": []map[string]string{{"type": "text", "text": "a time"}}}},
	} {
		var a apiChat
		c.postJSON(t, "/v1/chat/completions", map[string]any{"model": "m", "messages": msgs, "max_tokens": n, "temperature": 0,
			"logprobs": true, "top_logprobs": 2}, &a)
		if a.Object != "chat.completion" || !strings.HasPrefix(a.ID, "chatcmpl-") || len(a.Choices) != 1 || a.Choices[0].Message == nil {
			t.Fatalf("chat answer %+v", a)
		}
		ch := a.Choices[0]
		if ch.Message.Role != "assistant" || ch.Message.Content != want || ch.FinishReason == nil || *ch.FinishReason != "length" {
			t.Errorf("chat %v: %q (%v)\nwant %q", msgs, ch.Message.Content, ch.FinishReason, want)
		}
		if a.Usage == nil || a.Usage.Prompt != 5 || a.Usage.Completion != n {
			t.Errorf("chat usage %+v, want 5 prompt tokens (BOS + 4) and %d", a.Usage, n)
		}
		// The tokens' bytes spell the content, byte-fallback tokens included.
		if ch.Logprobs == nil || len(ch.Logprobs.Content) != n {
			t.Fatalf("chat logprobs %+v", ch.Logprobs)
		}
		var spelt []byte
		for i, lt := range ch.Logprobs.Content {
			spelt = append(spelt, lt.Bytes...)
			if len(lt.TopLogprobs) != 2 || lt.TopLogprobs[0].Logprob != lt.Logprob || lt.Logprob > 0 ||
				lt.TopLogprobs[1].Logprob > lt.TopLogprobs[0].Logprob {
				t.Fatalf("token %d %q: logprob %v, top %+v (greedy: the token is the best)", i, lt.Token, lt.Logprob, lt.TopLogprobs)
			}
		}
		if string(spelt) != want {
			t.Errorf("logprob bytes spell %q, content %q", spelt, want)
		}
	}

	// Streamed: a role chunk first, content deltas, a finish chunk, the
	// usage chunk, [DONE].
	raw, _ := c.sse(t, "/v1/chat/completions", map[string]any{"messages": []map[string]any{{"role": "user", "content": "Once upon a time"}},
		"max_completion_tokens": n, "temperature": 0, "stream": true, "stream_options": map[string]any{"include_usage": true},
		"logprobs": true})
	var text strings.Builder
	var finish string
	role, usage, logprobs := false, false, 0
	apiOpenAIEvents(t, raw, func(p string) {
		var ch apiChat
		apiJSON(t, p, &ch)
		if ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk object %q", ch.Object)
		}
		if ch.Usage != nil {
			usage = len(ch.Choices) == 0 && ch.Usage.Completion == n
			return
		}
		for _, cc := range ch.Choices {
			if cc.Delta == nil {
				t.Fatalf("chunk without delta: %s", p)
			}
			if cc.Delta.Role == "assistant" {
				role = text.Len() == 0 && finish == ""
			}
			if cc.Delta.Content != nil {
				if strings.ContainsRune(*cc.Delta.Content, utf8.RuneError) {
					t.Errorf("chunk with U+FFFD: %s", p)
				}
				text.WriteString(*cc.Delta.Content)
			}
			if cc.Logprobs != nil {
				logprobs += len(cc.Logprobs.Content)
			}
			if cc.FinishReason != nil {
				finish = *cc.FinishReason
			}
		}
	})
	if text.String() != want || finish != "length" || !role || !usage || logprobs != n {
		t.Errorf("chat stream: role chunk %v, finish %q, usage chunk %v, %d tokens with logprobs:\n got %q\nwant %q",
			role, finish, usage, logprobs, text.String(), want)
	}
}

func testUTF8Stream(t *testing.T, c *apiClient, tok *tokenizer.Tokenizer, ids []int32, chars []utf8Char) {
	want := tok.Decode(ids, true)
	if strings.ContainsRune(want, utf8.RuneError) || !utf8.ValidString(want) {
		t.Fatalf("the relabelled golden window does not decode cleanly: %q", want)
	}
	inside := map[int]bool{} // positions whose token does not complete a character
	last := map[int]string{} // position of a character's last byte → the character
	for _, ch := range chars {
		for k := range len(ch.char) - 1 {
			inside[ch.start+k] = true
		}
		last[ch.start+len(ch.char)-1] = ch.char
		if !strings.Contains(want, ch.char) {
			t.Fatalf("%q is not in the decoded window %q", ch.char, want)
		}
	}
	t.Logf("%d characters spelt byte by byte: %q", len(chars), want)

	// Native: one event per token, so every held-back byte shows.
	evs := apiNativeStream(t, c, "/generate_stream", map[string]any{"inputs": "",
		"parameters": map[string]any{"max_new_tokens": len(ids), "skip_special_tokens": true}})
	if len(evs) != len(ids) {
		t.Fatalf("%d events for %d tokens", len(evs), len(ids))
	}
	var text strings.Builder
	for i, ev := range evs {
		txt := ev.Token.Text
		if ev.Token.ID == nil || *ev.Token.ID != ids[i] {
			t.Fatalf("event %d: token %v, golden %d", i, ev.Token.ID, ids[i])
		}
		if !utf8.ValidString(txt) || strings.ContainsRune(txt, utf8.RuneError) {
			t.Fatalf("event %d carries a broken character: %q", i, txt)
		}
		switch {
		case inside[i] && txt != "":
			t.Errorf("event %d (inside a character) has text %q; the incomplete bytes must be held back", i, txt)
		case last[i] != "" && !strings.HasSuffix(txt, last[i]):
			t.Errorf("event %d completes %q but has text %q", i, last[i], txt)
		}
		text.WriteString(txt)
	}
	if text.String() != want {
		t.Errorf("native stream:\n got %q\nwant %q", text.String(), want)
	}

	// OpenAI completions, streamed from the same ids.
	raw, _ := c.sse(t, "/v1/completions", map[string]any{"prompt": []int32{1}, "max_tokens": len(ids), "temperature": 0, "stream": true})
	text.Reset()
	apiOpenAIEvents(t, raw, func(p string) {
		var ch apiCompletion
		apiJSON(t, p, &ch)
		for _, cc := range ch.Choices {
			if !utf8.ValidString(cc.Text) || strings.ContainsRune(cc.Text, utf8.RuneError) {
				t.Fatalf("chunk with a broken character: %s", p)
			}
			text.WriteString(cc.Text)
		}
	})
	if text.String() != want {
		t.Errorf("completions stream:\n got %q\nwant %q", text.String(), want)
	}
}
