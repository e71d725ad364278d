package chatout

import (
	"encoding/json"
	"errors"
)

// callScanner reads one call object, {"name": "f", "arguments": {...}}
// ("parameters" for Llama 3), a byte at a time. When the name comes before
// the arguments (the order every format and our grammars use), the
// arguments are released as they are read, so a stream can send them in
// fragments; otherwise they are released whole when the object closes.
type callScanner struct {
	st     scanState
	buf    []byte // the current key, or the current value
	esc    bool   // the previous byte in a string was a backslash
	inStr  bool   // inside a string of a container value
	depth  int    // container nesting of the current value
	kind   byte   // the current value's first byte class: '{', '"', 'p'
	key    string // the current key
	seen   map[string]bool
	name   string
	hasNm  bool
	args   []byte // released argument text not yet taken
	argsOK bool   // the arguments value is complete
	stream bool   // the arguments are being released as read
}

type scanState uint8

const (
	sObj      scanState = iota // before '{'
	sKeyOrEnd                  // after '{': a key or '}'
	sKeyNext                   // after ',': a key
	sKey                       // inside a key string
	sColon
	sValStart
	sVal
	sAfterVal
	sDone
)

var errNotCall = errors.New("not a tool call object")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isArgsKey(k string) bool { return k == "arguments" || k == "parameters" }

// feed reads c; errNotCall means the text is not a call object.
func (s *callScanner) feed(c byte) error {
	switch s.st {
	case sObj:
		switch {
		case isSpace(c):
		case c == '{':
			s.st, s.seen = sKeyOrEnd, map[string]bool{}
		default:
			return errNotCall
		}
	case sKeyOrEnd, sKeyNext:
		switch {
		case isSpace(c):
		case c == '"':
			s.st, s.buf, s.esc = sKey, append(s.buf[:0], '"'), false
		case c == '}' && s.st == sKeyOrEnd:
			return s.close()
		default:
			return errNotCall
		}
	case sKey:
		s.buf = append(s.buf, c)
		switch {
		case s.esc:
			s.esc = false
		case c == '\\':
			s.esc = true
		case c == '"':
			if json.Unmarshal(s.buf, &s.key) != nil || s.seen[s.key] {
				return errNotCall
			}
			s.seen[s.key] = true
			s.st = sColon
		}
	case sColon:
		switch {
		case isSpace(c):
		case c == ':':
			s.st = sValStart
		default:
			return errNotCall
		}
	case sValStart:
		if isSpace(c) {
			return nil
		}
		s.buf, s.esc, s.inStr, s.depth = append(s.buf[:0], c), false, false, 0
		switch {
		case c == '{' || c == '[':
			s.kind, s.depth = '{', 1
		case c == '"':
			s.kind = '"'
		case c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n':
			s.kind = 'p'
		default:
			return errNotCall
		}
		s.stream = isArgsKey(s.key) && s.hasNm && s.kind != '"'
		if s.stream {
			s.args = append(s.args, c)
		}
		s.st = sVal
	case sVal:
		return s.value(c)
	case sAfterVal:
		switch {
		case isSpace(c):
		case c == ',':
			s.st = sKeyNext
		case c == '}':
			return s.close()
		default:
			return errNotCall
		}
	case sDone:
		return errNotCall
	}
	return nil
}

// value reads the next byte of the current value.
func (s *callScanner) value(c byte) error {
	if s.kind == 'p' {
		if isSpace(c) || c == ',' || c == '}' {
			if err := s.endValue(); err != nil {
				return err
			}
			return s.feed(c)
		}
		s.buf = append(s.buf, c)
		if s.stream {
			s.args = append(s.args, c)
		}
		return nil
	}
	s.buf = append(s.buf, c)
	if s.stream {
		s.args = append(s.args, c)
	}
	inString := s.kind == '"' || s.inStr
	switch {
	case inString && s.esc:
		s.esc = false
	case inString && c == '\\':
		s.esc = true
	case c == '"' && s.kind == '"':
		return s.endValue()
	case c == '"':
		s.inStr = !s.inStr
	case inString:
	case c == '{' || c == '[':
		s.depth++
	case c == '}' || c == ']':
		s.depth--
		if s.depth == 0 {
			return s.endValue()
		}
	}
	return nil
}

func (s *callScanner) endValue() error {
	s.st = sAfterVal
	switch {
	case s.key == "name":
		if s.kind != '"' || json.Unmarshal(s.buf, &s.name) != nil || s.name == "" {
			return errNotCall
		}
		s.hasNm = true
	case isArgsKey(s.key):
		if s.seen["arguments"] && s.seen["parameters"] {
			return errNotCall
		}
		if !json.Valid(s.buf) {
			return errNotCall
		}
		switch {
		case s.kind == '"': // arguments sent as a JSON string holding JSON
			var str string
			if json.Unmarshal(s.buf, &str) != nil {
				return errNotCall
			}
			s.args = append(s.args, str...)
		case !s.stream:
			s.args = append(s.args, s.buf...)
		}
		s.argsOK = true
	}
	return nil
}

func (s *callScanner) close() error {
	if !s.hasNm {
		return errNotCall
	}
	if !s.argsOK { // a call without arguments takes none
		s.args = append(s.args, "{}"...)
		s.argsOK = true
	}
	s.st = sDone
	return nil
}

// takeArgs returns the argument text released since the last call.
func (s *callScanner) takeArgs() string {
	out := string(s.args)
	s.args = s.args[:0]
	return out
}
