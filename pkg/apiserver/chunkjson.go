package apiserver

import (
	"strconv"
	"unicode/utf8"
)

// The per-token completion chunk is written by hand: encoding/json's
// reflection was a third of the apiserver's user CPU per streamed token,
// and a stream is one chunk per token. The bytes are exactly marshal's
// (TestCompletionChunkJSON compares them, FuzzAppendJSONString the string
// escaping); a chunk with logprobs or a usage object goes through marshal.

// appendJSON appends c as marshal encodes it; ok is false when c has
// parts this encoder leaves to marshal.
func (c *completionResponse) appendJSON(b []byte) (_ []byte, ok bool) {
	if len(c.Choices) != 1 || c.Choices[0].Logprobs != nil || (c.Usage != nil && string(c.Usage) != "null") {
		return b, false
	}
	ch := &c.Choices[0]
	b = append(b, `{"id":`...)
	b = appendJSONString(b, c.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, c.Object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, c.Created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, c.Model)
	b = append(b, `,"choices":[{"text":`...)
	b = appendJSONString(b, ch.Text)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(ch.Index), 10)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if ch.FinishReason == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *ch.FinishReason)
	}
	b = append(b, "}]"...)
	if c.Usage != nil { // omitempty keeps a non-nil RawMessage
		b = append(b, `,"usage":null`...)
	}
	return append(b, '}'), true
}

// appendJSONString appends s quoted as encoding/json does without HTML
// escaping: \" \\ \b \f \n \r \t, other control characters as \u00XX,
// invalid UTF-8 as \ufffd, and U+2028, U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
