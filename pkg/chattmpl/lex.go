package chattmpl

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// translate rewrites a chat template into an equivalent one that the jinja
// library renders exactly as Python jinja2 does with HF's environment
// (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False).
//
// Why: the library applies whitespace control per segment, looking past
// neighbouring tags for text, has no '+' modifiers, no {% raw %}, keeps the
// template's trailing newline, knows only a few string escapes, formats
// values the Go way in {{ }} and has a tojson that differs from HF's. Rather
// than fork it, we lex the template the way jinja2's lexer does, apply the
// whitespace rules ourselves and emit a template in which
//   - every text run is already final and can no longer be touched by the
//     library's own trimming (runs that it would touch are emitted as string
//     literals inside {{ }}),
//   - tags carry no '-'/'+' markers,
//   - string literals use only escapes the library understands,
//   - {{ e }} becomes {{ (e) | __ll_str }} (Python str()),
//   - the filters tojson/trim/string map to our Python-exact versions, and
//     s.strip()/lstrip()/rstrip() get Python's whitespace set as cutset,
//   - {% generation %} blocks (HF's AssistantTracker) render their body.
func translate(src string) (string, error) {
	src = normalizeNewlines(src)
	if strings.Contains(src, loopMark) {
		return "", &SyntaxError{Line: 1, Msg: "template contains NUL bytes"}
	}
	l := lexer{src: src, lineStarting: true}
	if err := l.run(); err != nil {
		return "", err
	}
	return l.finishLoops(l.out.String()), nil
}

// Names we inject into the render context. The "__ll_" prefix keeps them
// clear of anything a real template uses.
const (
	fnStr    = "__ll_str"
	fnToJSON = "__ll_tojson"
	fnTrim   = "__ll_trim"
	fnMul    = "__ll_mul"
	fnList   = "__ll_list"
	fnJoin   = "__ll_join"
	varWS    = "__ll_ws"
)

// filterRenames maps jinja2 filter names to our replacements.
var filterRenames = map[string]string{
	"tojson": fnToJSON,
	"trim":   fnTrim,
	"string": fnStr,
	"list":   fnList,
	"join":   fnJoin,
}

// normalizeNewlines does what jinja2's lexer does first: every \r\n, \r, \n
// becomes \n, and one trailing newline is dropped (keep_trailing_newline is
// False in HF's environment).
func normalizeNewlines(s string) string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.TrimSuffix(s, "\n")
}

// SyntaxError is a template that jinja2 would refuse to compile.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("template syntax error at line %d: %s", e.Line, e.Msg)
}

type lexer struct {
	src          string
	pos          int
	lineStarting bool // the previous token ended with "\n" (jinja2's line_starting)
	out          strings.Builder
	scopes       []*blockScope // open for/macro/call/filter/set blocks
	loops        []*blockScope // every for loop, by id
}

// blockScope is an open block that starts a variable scope in jinja2.
// For loops record the names their body assigns: in jinja2 each iteration
// starts from the enclosing scope's values, while the library keeps one
// scope across iterations, so a value set in one iteration would leak into
// the next. We save those names before the loop and restore them at the
// top of every iteration (see finishLoops).
type blockScope struct {
	tag      string
	id       int
	loopVars []string // bound by the library each iteration: never restored
	targets  []string
}

const loopMark = "\x00loop"

func (l *lexer) errorf(at int, format string, args ...any) error {
	return &SyntaxError{Line: 1 + strings.Count(l.src[:at], "\n"), Msg: fmt.Sprintf(format, args...)}
}

// tagStart finds the next "{{", "{%" or "{#" at or after from.
func (l *lexer) tagStart(from int) int {
	for i := from; i+1 < len(l.src); i++ {
		if l.src[i] == '{' {
			switch l.src[i+1] {
			case '{', '%', '#':
				return i
			}
		}
	}
	return -1
}

func (l *lexer) run() error {
	for l.pos < len(l.src) {
		start := l.tagStart(l.pos)
		if start < 0 {
			l.emitText(l.src[l.pos:])
			return nil
		}
		text := l.src[l.pos:start]
		kind := l.src[start+1]
		sign := byte(0)
		if start+2 < len(l.src) && (l.src[start+2] == '-' || l.src[start+2] == '+') {
			sign = l.src[start+2]
		}
		l.emitText(l.lstrip(text, sign, kind != '{'))
		var err error
		switch kind {
		case '#':
			err = l.comment(start, sign)
		case '{':
			err = l.variable(start, sign)
		default:
			err = l.block(start, sign)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// lstrip applies jinja2's OptionalLStrip to the text before a tag.
func (l *lexer) lstrip(text string, sign byte, isBlock bool) string {
	if sign == '-' {
		return pyStrip(text, false, true)
	}
	if sign == '+' || !isBlock {
		return text
	}
	lpos := strings.LastIndexByte(text, '\n') + 1
	if lpos > 0 || l.lineStarting {
		if strings.Trim(text[lpos:], " \t") == "" {
			return text[:lpos]
		}
	}
	return text
}

// afterEnd consumes the whitespace an end marker swallows and records
// whether the consumed text ended a line.
func (l *lexer) afterEnd(end int, minus, trimBlock bool) {
	if minus {
		rest := pyStrip(l.src[end:], true, false)
		end = len(l.src) - len(rest)
	} else if trimBlock && end < len(l.src) && l.src[end] == '\n' {
		end++
	}
	l.lineStarting = end > 0 && l.src[end-1] == '\n'
	l.pos = end
}

func (l *lexer) comment(start int, sign byte) error {
	body := start + 2
	if sign != 0 {
		body++
	}
	rel := strings.Index(l.src[body:], "#}")
	if rel < 0 {
		return l.errorf(start, "missing end of comment tag")
	}
	q := body + rel
	minus := q > body && l.src[q-1] == '-'
	plus := q > body && l.src[q-1] == '+'
	l.afterEnd(q+2, minus, !plus)
	return nil
}

// scanCode finds the end marker of a {{ }} or {% %} tag, skipping string
// literals and bracketed code as jinja2's lexer does. It returns the index of
// the closing "}}"/"%}" and the modifier just before it.
func (l *lexer) scanCode(start, body int, closer byte) (end int, mod byte, err error) {
	var stack []byte
	for i := body; i < len(l.src); {
		c := l.src[i]
		switch {
		case c == '\'' || c == '"':
			j, ok := skipString(l.src, i)
			if !ok {
				return 0, 0, l.errorf(i, "unterminated string literal")
			}
			i = j
			continue
		case len(stack) == 0 && (c == '-' || c == '+') && i+2 < len(l.src) && l.src[i+1] == closer && l.src[i+2] == '}':
			if c == '+' && closer == '}' {
				break // "+}}" is not a marker: '+' is an operator there
			}
			return i + 1, c, nil
		case len(stack) == 0 && c == closer && i+1 < len(l.src) && l.src[i+1] == '}':
			return i, 0, nil
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case c == ')' || c == ']' || c == '}':
			want := map[byte]byte{')': '(', ']': '[', '}': '{'}[c]
			if len(stack) == 0 || stack[len(stack)-1] != want {
				return 0, 0, l.errorf(i, "unexpected %q", c)
			}
			stack = stack[:len(stack)-1]
		}
		i++
	}
	what := "variable"
	if closer == '%' {
		what = "block"
	}
	return 0, 0, l.errorf(start, "unexpected end of template: missing end of %s tag", what)
}

func (l *lexer) variable(start int, sign byte) error {
	body := start + 2
	if sign != 0 { // jinja2 accepts "{{+" too; it changes nothing for variables
		body++
	}
	end, mod, err := l.scanCode(start, body, '}')
	if err != nil {
		return err
	}
	codeEnd := end
	if mod != 0 {
		codeEnd--
	}
	code := l.src[body:codeEnd]
	if strings.TrimSpace(code) == "" {
		return l.errorf(start, "expected an expression, got end of print statement")
	}
	rw, err := l.rewriteCode(code, body)
	if err != nil {
		return err
	}
	l.out.WriteString("{{ (" + rw + ") | " + fnStr + " }}")
	l.afterEnd(end+2, mod == '-', false)
	return nil
}

func (l *lexer) block(start int, sign byte) error {
	body := start + 2
	if sign != 0 {
		body++
	}
	word := firstWord(l.src[body:])
	if word == "raw" {
		return l.raw(start, body)
	}
	end, mod, err := l.scanCode(start, body, '%')
	if err != nil {
		return err
	}
	codeEnd := end
	if mod != 0 {
		codeEnd--
	}
	code := l.src[body:codeEnd]
	switch strings.TrimSpace(code) {
	case "generation":
		l.out.WriteString("{% if true %}")
	case "endgeneration":
		l.out.WriteString("{% endif %}")
	default:
		if word == "" {
			return l.errorf(start, "tag name expected")
		}
		rw, err := l.rewriteCode(code, body)
		if err != nil {
			return err
		}
		l.trackScope(word, code, "{% "+rw+" %}")
	}
	l.afterEnd(end+2, mod == '-', mod != '+')
	return nil
}

// trackScope writes a block tag, following the blocks that open scopes and
// the names that for-loop bodies assign.
func (l *lexer) trackScope(word, code, tag string) {
	switch word {
	case "for":
		sc := &blockScope{tag: "for", id: len(l.loops)}
		for _, f := range strings.Fields(strings.ReplaceAll(strings.TrimSpace(code)[len("for"):], ",", " ")) {
			if f == "in" {
				break
			}
			sc.loopVars = append(sc.loopVars, strings.Trim(f, "()"))
		}
		l.loops = append(l.loops, sc)
		l.scopes = append(l.scopes, sc)
		fmt.Fprintf(&l.out, "%s%db\x00%s%s%da\x00", loopMark, sc.id, tag, loopMark, sc.id)
		return
	case "macro", "call", "filter":
		l.scopes = append(l.scopes, &blockScope{tag: word})
	case "set":
		targets, block := setTargets(code)
		if n := len(l.scopes); n > 0 && l.scopes[n-1].tag == "for" {
			l.scopes[n-1].addTargets(targets)
		}
		if block {
			l.scopes = append(l.scopes, &blockScope{tag: "set"})
		}
	case "endfor", "endmacro", "endcall", "endfilter", "endset":
		if n := len(l.scopes); n > 0 && l.scopes[n-1].tag == strings.TrimPrefix(word, "end") {
			l.scopes = l.scopes[:n-1]
		}
	}
	l.out.WriteString(tag)
}

func (sc *blockScope) addTargets(names []string) {
	for _, n := range names {
		if !slices.Contains(sc.targets, n) && !slices.Contains(sc.loopVars, n) {
			sc.targets = append(sc.targets, n)
		}
	}
}

// setTargets returns the plain names a {% set %} assigns (namespace
// attributes like ns.x are not bindings) and whether it is a block set.
func setTargets(code string) ([]string, bool) {
	rest := strings.TrimSpace(code)[len("set"):]
	lhs, _, isAssign := strings.Cut(rest, "=")
	var names []string
	for _, part := range strings.Split(lhs, ",") {
		part = strings.Trim(strings.TrimSpace(part), "()")
		if part != "" && isIdentStart(part[0]) && strings.IndexFunc(part, func(r rune) bool { return r > 127 || !isIdentChar(byte(r)) }) < 0 {
			names = append(names, part)
		}
	}
	return names, !isAssign
}

// finishLoops replaces the loop markers with the save/restore statements.
func (l *lexer) finishLoops(out string) string {
	if len(l.loops) == 0 {
		return out
	}
	pairs := make([]string, 0, 4*len(l.loops))
	for _, sc := range l.loops {
		var save, restore strings.Builder
		for _, n := range sc.targets {
			saved := fmt.Sprintf("__ll_s%d_%s", sc.id, n)
			fmt.Fprintf(&save, "{%% set %s = %s %%}", saved, n)
			fmt.Fprintf(&restore, "{%% set %s = %s %%}", n, saved)
		}
		pairs = append(pairs, fmt.Sprintf("%s%db\x00", loopMark, sc.id), save.String(),
			fmt.Sprintf("%s%da\x00", loopMark, sc.id), restore.String())
	}
	return strings.NewReplacer(pairs...).Replace(out)
}

// raw handles {% raw %}...{% endraw %}: the body is literal text. As in
// jinja2, the raw-begin tag does not apply trim_blocks.
func (l *lexer) raw(start, body int) error {
	i := skipSpace(l.src, body) + len("raw")
	i = skipSpace(l.src, i)
	switch {
	case strings.HasPrefix(l.src[i:], "-%}"):
		l.afterEnd(i+3, true, false)
	case strings.HasPrefix(l.src[i:], "%}"):
		l.afterEnd(i+2, false, false)
	default:
		return l.errorf(start, "malformed raw tag")
	}
	for from := l.pos; ; {
		t := strings.Index(l.src[from:], "{%")
		if t < 0 {
			return l.errorf(start, "missing end of raw directive")
		}
		t += from
		j := t + 2
		sign := byte(0)
		if j < len(l.src) && (l.src[j] == '-' || l.src[j] == '+') {
			sign = l.src[j]
			j++
		}
		j = skipSpace(l.src, j)
		if !strings.HasPrefix(l.src[j:], "endraw") {
			from = t + 2
			continue
		}
		k := skipSpace(l.src, j+len("endraw"))
		var endAt int
		var mod byte
		switch {
		case strings.HasPrefix(l.src[k:], "+%}"), strings.HasPrefix(l.src[k:], "-%}"):
			mod, endAt = l.src[k], k+3
		case strings.HasPrefix(l.src[k:], "%}"):
			endAt = k + 2
		default:
			from = t + 2
			continue
		}
		l.emitText(l.lstrip(l.src[l.pos:t], sign, true))
		l.afterEnd(endAt, mod == '-', mod == 0)
		return nil
	}
}

// emitText writes final text. Runs the library would still trim (a leading
// newline, trailing blanks) or misread (tag openers, a trailing '{' that
// would merge with our next tag) go out as a string literal instead.
func (l *lexer) emitText(t string) {
	if t == "" {
		return
	}
	risky := t[0] == '\n' || strings.HasSuffix(t, " ") || strings.HasSuffix(t, "\t") ||
		strings.HasSuffix(t, "{") || strings.Contains(t, "{{") || strings.Contains(t, "{%") ||
		strings.Contains(t, "{#")
	if !risky {
		l.out.WriteString(t)
		return
	}
	l.out.WriteString("{{ ")
	l.out.WriteString(libQuote(t))
	l.out.WriteString(" }}")
}

// libQuote quotes s for the library's expression tokenizer, which decodes
// only \\ \' \" \n \t; every other byte is taken literally.
func libQuote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

func skipSpace(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	return i
}

func firstWord(s string) string {
	i := skipSpace(s, 0)
	j := i
	for j < len(s) && isIdentChar(s[j]) {
		j++
	}
	return s[i:j]
}

// skipString returns the index just past the string literal starting at i.
func skipString(s string, i int) (int, bool) {
	q := s[i]
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case q:
			return j + 1, true
		}
	}
	return 0, false
}

// pyUnescape decodes a jinja2 string literal body as jinja2 does
// (backslashreplace + unicode-escape): Python's escapes are decoded, an
// unknown escape keeps its backslash, non-ASCII text passes through.
func pyUnescape(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			i++
			continue
		}
		c := s[i+1]
		i += 2
		switch c {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(c)
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			if i+n > len(s) {
				return "", fmt.Errorf("truncated \\%c escape in string literal", c)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || v > utf8.MaxRune {
				return "", fmt.Errorf("bad \\%c escape %q in string literal", c, s[i:i+n])
			}
			b.WriteRune(rune(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i - 1
			for j < len(s) && j < i+2 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i-1:j], 8, 32)
			b.WriteRune(rune(v))
			i = j
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
