package chattmpl

import (
	"strings"
)

// The code inside {{ }} and {% %} is rewritten at token level (see
// translate): filter renames, Python-whitespace strip(), requoted string
// literals, and '~' operands wrapped in our str() because the library's '~'
// prints None as "" and floats the Go way.

type ctokKind int

const (
	ctSpace ctokKind = iota
	ctString
	ctName
	ctNumber
	ctOp
	ctOpen
	ctClose
)

type ctok struct {
	kind ctokKind
	text string // as emitted; string literals already requoted
}

// tokenizeCode splits tag code into tokens. at is the code's offset in the
// source, for error lines.
func (l *lexer) tokenizeCode(code string, at int) ([]ctok, error) {
	var toks []ctok
	for i := 0; i < len(code); {
		c := code[i]
		j := i + 1
		var k ctokKind
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			for j < len(code) && (code[j] == ' ' || code[j] == '\t' || code[j] == '\n') {
				j++
			}
			k = ctSpace
		case c == '\'' || c == '"':
			end, ok := skipString(code, i)
			if !ok {
				return nil, l.errorf(at+i, "unterminated string literal")
			}
			s, err := pyUnescape(code[i+1 : end-1])
			if err != nil {
				return nil, l.errorf(at+i, "%v", err)
			}
			toks = append(toks, ctok{ctString, libQuote(s)})
			i = end
			continue
		case isIdentStart(c):
			for j < len(code) && isIdentChar(code[j]) {
				j++
			}
			k = ctName
		case c >= '0' && c <= '9':
			for j < len(code) && (isIdentChar(code[j]) || (code[j] == '.' && j+1 < len(code) && code[j+1] >= '0' && code[j+1] <= '9')) {
				j++
			}
			k = ctNumber
		case c == '(' || c == '[' || c == '{':
			k = ctOpen
		case c == ')' || c == ']' || c == '}':
			k = ctClose
		default:
			k = ctOp
			if j < len(code) {
				switch code[i : j+1] {
				case "==", "!=", "<=", ">=", "**", "//":
					j++
				}
			}
			// jinja2's lexer knows only these operator characters; the
			// library skips others (so "x|!select" became a filter call it
			// then panicked in), jinja2 stops with a syntax error. Bytes
			// above ASCII outside string literals (identifiers jinja2
			// would take as Unicode names) are refused the same way: the
			// library skips those too. jinja2 lexes ';' but no rule of its
			// grammar takes one, so it is refused here too (the library
			// skipped it: "x|;select" panicked like "x|!select").
			if j == i+1 && !strings.ContainsRune("+-/*%~.:|,=<>", rune(c)) {
				return nil, l.errorf(at+i, "unexpected char %q", c)
			}
		}
		toks = append(toks, ctok{k, code[i:j]})
		i = j
	}
	return toks, nil
}

func (l *lexer) rewriteCode(code string, at int) (string, error) {
	toks, err := l.tokenizeCode(code, at)
	if err != nil {
		return "", err
	}
	// sig indexes the non-space tokens; neighbours are looked up through it.
	var sig []int
	for i, t := range toks {
		if t.kind != ctSpace {
			sig = append(sig, i)
		}
	}
	for n, i := range sig {
		t := &toks[i]
		if t.kind != ctName || n == 0 {
			continue
		}
		prev := toks[sig[n-1]]
		switch {
		case prev.kind == ctOp && prev.text == "|" && filterRenames[t.text] != "":
			t.text = filterRenames[t.text]
		case prev.kind == ctOp && prev.text == "|" && truthFilterRename(t.text, filterArgCount(toks, sig, n)) != "":
			t.text = truthFilterRename(t.text, filterArgCount(toks, sig, n))
		case prev.kind == ctOp && prev.text == "." && (t.text == "strip" || t.text == "lstrip" || t.text == "rstrip") &&
			n+2 < len(sig) && toks[sig[n+1]].text == "(" && toks[sig[n+2]].text == ")":
			toks[sig[n+1]].text = "(" + varWS
		}
	}
	pre := make([]string, len(toks))
	post := make([]string, len(toks))
	mid := make([]string, len(toks))
	for i, t := range toks {
		mid[i] = t.text
	}
	mulWraps(toks, sig, pre, mid, post) // before concat: its wraps must nest outside
	concatWraps(toks, sig, pre, post)
	var b strings.Builder
	for i, t := range toks {
		b.WriteString(pre[i])
		b.WriteString(mid[i])
		b.WriteString(post[i])
		// Keep "}}" and "%}" out of emitted code: the library's scanner
		// would end the tag there.
		if (t.text == "}" || t.text == "%") && i+1 < len(toks) && strings.HasPrefix(pre[i+1]+toks[i+1].text, "}") {
			b.WriteByte(' ')
		}
	}
	return b.String(), nil
}

// concatBoundary reports tokens that end a '~' operand: everything that
// binds more loosely than '~' in jinja2's grammar, plus separators.
func concatBoundary(t ctok) bool {
	switch t.kind {
	case ctName:
		switch t.text {
		case "and", "or", "not", "in", "is", "if", "elif", "else", "for", "set", "with", "recursive":
			return true
		}
	case ctOp:
		switch t.text {
		case "==", "!=", "<", ">", "<=", ">=", "=", ",", ":", "~":
			return true
		}
	}
	return false
}

// concatWraps finds the operands of every '~' and adds text before/after
// tokens so that each operand X becomes ((X) | __ll_str).
func concatWraps(toks []ctok, sig []int, pre, post []string) {
	type span struct{ a, b int } // sig positions, inclusive
	seen := map[span]bool{}
	for n, i := range sig {
		if toks[i].kind != ctOp || toks[i].text != "~" {
			continue
		}
		// Left operand: walk back over balanced groups to a boundary.
		a, depth := n-1, 0
		for ; a >= 0; a-- {
			t := toks[sig[a]]
			if t.kind == ctClose {
				depth++
			} else if t.kind == ctOpen {
				if depth == 0 {
					break
				}
				depth--
			} else if depth == 0 && concatBoundary(t) {
				break
			}
		}
		// Right operand: walk forward likewise.
		b := n + 1
		depth = 0
		for ; b < len(sig); b++ {
			t := toks[sig[b]]
			if t.kind == ctOpen {
				depth++
			} else if t.kind == ctClose {
				if depth == 0 {
					break
				}
				depth--
			} else if depth == 0 && concatBoundary(t) {
				break
			}
		}
		for _, s := range []span{{a + 1, n - 1}, {n + 1, b - 1}} {
			if s.a > s.b || seen[s] {
				continue // an empty operand is a syntax error the parser reports
			}
			seen[s] = true
			pre[sig[s.a]] = "((" + pre[sig[s.a]]
			post[sig[s.b]] += ") | " + fnStr + ")"
		}
	}
}

// isOperandEnd reports whether a token can end an operand, which makes a
// following '-' or '+' binary.
func isOperandEnd(t ctok) bool {
	switch t.kind {
	case ctString, ctNumber, ctClose:
		return true
	case ctName:
		return !concatBoundary(t)
	}
	return false
}

// mulWraps turns every A * B into __ll_mul(A, B): the library's '*' panics
// on a negative repeat count and allocates without bound, and a context
// value can steer both.
func mulWraps(toks []ctok, sig []int, pre, mid, post []string) {
	binaryAt := func(n int) bool { // sig position n holds '+'/'-': binary?
		return n > 0 && isOperandEnd(toks[sig[n-1]])
	}
	isMulLevel := func(t ctok) bool {
		return t.kind == ctOp && (t.text == "*" || t.text == "/" || t.text == "//" || t.text == "%")
	}
	for n, i := range sig {
		if toks[i].kind != ctOp || toks[i].text != "*" {
			continue
		}
		// Left operand: left-associative, so it runs through earlier
		// '*', '/', '//', '%' and stops at anything looser.
		a, depth := n-1, 0
		for ; a >= 0; a-- {
			t := toks[sig[a]]
			if t.kind == ctClose {
				depth++
			} else if t.kind == ctOpen {
				if depth == 0 {
					break
				}
				depth--
			} else if depth == 0 && (concatBoundary(t) || (t.kind == ctOp && (t.text == "+" || t.text == "-") && binaryAt(a))) {
				break
			}
		}
		b := n + 1
		depth = 0
		for ; b < len(sig); b++ {
			t := toks[sig[b]]
			if t.kind == ctOpen {
				depth++
			} else if t.kind == ctClose {
				if depth == 0 {
					break
				}
				depth--
			} else if depth == 0 && (concatBoundary(t) || isMulLevel(t) ||
				(t.kind == ctOp && (t.text == "+" || t.text == "-") && binaryAt(b))) {
				break
			}
		}
		if a+1 > n-1 || n+1 > b-1 {
			continue // a missing operand: leave it to the parser's error
		}
		pre[sig[a+1]] = fnMul + "(" + pre[sig[a+1]]
		mid[i] = ","
		post[sig[b-1]] += ")"
	}
}
