package eppproxy

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file is the subset of envoy.service.ext_proc.v3 that a gateway sends
// and reads, encoded by hand with protowire. Field numbers are those of
// envoy/service/ext_proc/v3/external_processor.proto, envoy/config/core/v3/
// base.proto and google/protobuf/struct.proto; wire_test.go checks them
// against bytes produced by go-control-plane's generated types.

// ProcessingRequest fields (the request oneof plus the side fields).
const (
	reqRequestHeaders  protowire.Number = 2
	reqResponseHeaders protowire.Number = 3
	reqRequestBody     protowire.Number = 4
	reqResponseBody    protowire.Number = 5
	reqMetadataContext protowire.Number = 8
	reqProtocolConfig  protowire.Number = 11
)

// ProcessingResponse fields.
const (
	respRequestHeaders    protowire.Number = 1
	respResponseHeaders   protowire.Number = 2
	respRequestBody       protowire.Number = 3
	respResponseBody      protowire.Number = 4
	respRequestTrailers   protowire.Number = 5
	respResponseTrailers  protowire.Number = 6
	respImmediateResponse protowire.Number = 7
	respDynamicMetadata   protowire.Number = 8
)

// bodyModeFullDuplex is ProcessingMode.BodySendMode FULL_DUPLEX_STREAMED,
// the mode the inference gateways configure for the EPP.
const bodyModeFullDuplex = 4

// Header append actions (envoy.config.core.v3.HeaderValueOption).
const (
	appendIfExistsOrAdd    = 0
	addIfAbsent            = 1
	overwriteIfExistsOrAdd = 2
	overwriteIfExists      = 3
)

// Header is one HTTP header as ext_proc carries it: a lower-case key and
// raw bytes.
type Header struct {
	Key   string
	Value string
}

// HeaderOption is one entry of a HeaderMutation's set_headers.
type HeaderOption struct {
	Header
	// Append is the deprecated BoolValue append, when present.
	Append *bool
	// Action is append_action; 0 (also the unset value) replaces.
	Action int
}

// Kind says which oneof arm a ProcessingResponse carries.
type Kind int

// Response kinds, in the order of the proto's oneof.
const (
	KindUnknown Kind = iota
	KindRequestHeaders
	KindResponseHeaders
	KindRequestBody
	KindResponseBody
	KindRequestTrailers
	KindResponseTrailers
	KindImmediate
)

func (k Kind) String() string {
	switch k {
	case KindRequestHeaders:
		return "request_headers"
	case KindResponseHeaders:
		return "response_headers"
	case KindRequestBody:
		return "request_body"
	case KindResponseBody:
		return "response_body"
	case KindRequestTrailers:
		return "request_trailers"
	case KindResponseTrailers:
		return "response_trailers"
	case KindImmediate:
		return "immediate_response"
	}
	return "unknown"
}

// Mutation is a CommonResponse (or a TrailersResponse's header mutation).
type Mutation struct {
	Status          int // CONTINUE (0) or CONTINUE_AND_REPLACE (1)
	SetHeaders      []HeaderOption
	RemoveHeaders   []string
	ClearRouteCache bool

	// Body mutation: at most one of these is set.
	Streamed     bool   // streamed_response (FULL_DUPLEX_STREAMED)
	StreamedBody []byte // its body
	StreamedEOS  bool   // its end_of_stream
	Replace      bool   // body: replace the whole body
	ReplaceBody  []byte
	ClearBody    bool
}

// Immediate is an ImmediateResponse: the processor answers the client.
type Immediate struct {
	Status     int // HTTP status; 0 when absent
	SetHeaders []HeaderOption
	Body       []byte
	Details    string
}

// Response is a decoded ProcessingResponse.
type Response struct {
	Kind      Kind
	Mutation  Mutation   // for the headers, body and trailers kinds
	Immediate *Immediate // for KindImmediate
	// Metadata is dynamic_metadata flattened to namespace → key → string
	// value (only string values are kept: that is what the EPP sends).
	Metadata map[string]map[string]string
}

// --- encoding ---------------------------------------------------------------

func appendBytesField(b []byte, n protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func appendStringField(b []byte, n protowire.Number, v string) []byte {
	b = protowire.AppendTag(b, n, protowire.BytesType)
	return protowire.AppendString(b, v)
}

func appendVarintField(b []byte, n protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, n, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// encodeHeaderMap encodes envoy.config.core.v3.HeaderMap with raw_value,
// as current Envoy sends headers.
func encodeHeaderMap(hs []Header) []byte {
	var m []byte
	for _, h := range hs {
		var hv []byte
		hv = appendStringField(hv, 1, h.Key)
		hv = appendBytesField(hv, 3, []byte(h.Value))
		m = appendBytesField(m, 1, hv)
	}
	return m
}

// encodeHTTPHeaders encodes HttpHeaders{headers, end_of_stream}.
func encodeHTTPHeaders(hs []Header, eos bool) []byte {
	b := appendBytesField(nil, 1, encodeHeaderMap(hs))
	if eos {
		b = appendVarintField(b, 3, 1)
	}
	return b
}

// EncodeRequestHeaders is the first message of a stream: the request
// headers plus the protocol configuration (both bodies FULL_DUPLEX_STREAMED,
// which is what the processor must answer with streamed body mutations).
//
// Fields are written in the order protobuf-go writes them (plain fields,
// then the oneof), so that the bytes equal go-control-plane's.
func EncodeRequestHeaders(hs []Header, eos bool) []byte {
	var pc []byte
	pc = appendVarintField(pc, 1, bodyModeFullDuplex)
	pc = appendVarintField(pc, 2, bodyModeFullDuplex)
	b := appendBytesField(nil, reqProtocolConfig, pc)
	return appendBytesField(b, reqRequestHeaders, encodeHTTPHeaders(hs, eos))
}

// EncodeResponseHeaders carries the upstream's response headers (":status"
// first) and, as Envoy's metadata_context, the endpoint that served the
// request under envoy.lb / x-gateway-destination-endpoint-served.
func EncodeResponseHeaders(hs []Header, eos bool, served string) []byte {
	var b []byte
	if served != "" {
		md := encodeFilterMetadata(NamespaceLB, map[string]string{ServedEndpointKey: served})
		b = appendBytesField(b, reqMetadataContext, md)
	}
	return appendBytesField(b, reqResponseHeaders, encodeHTTPHeaders(hs, eos))
}

// EncodeRequestBody and EncodeResponseBody carry one body chunk (HttpBody).
func EncodeRequestBody(chunk []byte, eos bool) []byte {
	return appendBytesField(nil, reqRequestBody, encodeHTTPBody(chunk, eos))
}

// EncodeResponseBody is EncodeRequestBody for the response direction.
func EncodeResponseBody(chunk []byte, eos bool) []byte {
	return appendBytesField(nil, reqResponseBody, encodeHTTPBody(chunk, eos))
}

func encodeHTTPBody(chunk []byte, eos bool) []byte {
	var b []byte
	if len(chunk) > 0 {
		b = appendBytesField(b, 1, chunk)
	}
	if eos {
		b = appendVarintField(b, 2, 1)
	}
	return b
}

// encodeFilterMetadata encodes envoy.config.core.v3.Metadata with one
// filter_metadata entry whose Struct holds string values.
func encodeFilterMetadata(ns string, kv map[string]string) []byte {
	var st []byte
	for _, k := range sortedKeys(kv) {
		val := appendStringField(nil, 3, kv[k]) // Value.string_value
		var entry []byte
		entry = appendStringField(entry, 1, k)
		entry = appendBytesField(entry, 2, val)
		st = appendBytesField(st, 1, entry) // Struct.fields
	}
	var entry []byte
	entry = appendStringField(entry, 1, ns)
	entry = appendBytesField(entry, 2, st)
	return appendBytesField(nil, 1, entry) // Metadata.filter_metadata
}

// --- decoding ---------------------------------------------------------------

// fieldFunc handles one field; v is the raw value for bytes fields and the
// varint for varint fields.
type fieldFunc func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error

// walk calls f for every field of msg, skipping groups and fixed-width
// fields after validating them.
func walk(msg []byte, f fieldFunc) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("bad tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		switch typ {
		case protowire.BytesType:
			v, m := protowire.ConsumeBytes(msg)
			if m < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
			}
			if err := f(num, typ, v, 0); err != nil {
				return err
			}
			msg = msg[m:]
		case protowire.VarintType:
			x, m := protowire.ConsumeVarint(msg)
			if m < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
			}
			if err := f(num, typ, nil, x); err != nil {
				return err
			}
			msg = msg[m:]
		default:
			m := protowire.ConsumeFieldValue(num, typ, msg)
			if m < 0 {
				return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
			}
			msg = msg[m:]
		}
	}
	return nil
}

// DecodeResponse parses a ProcessingResponse. Unknown fields are skipped, as
// protobuf requires; malformed input is an error.
func DecodeResponse(b []byte) (*Response, error) {
	r := &Response{}
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case respRequestHeaders, respResponseHeaders, respRequestBody, respResponseBody:
			r.Kind = map[protowire.Number]Kind{
				respRequestHeaders: KindRequestHeaders, respResponseHeaders: KindResponseHeaders,
				respRequestBody: KindRequestBody, respResponseBody: KindResponseBody,
			}[num]
			// HeadersResponse and BodyResponse: response (1) CommonResponse.
			return walk(v, func(n protowire.Number, t protowire.Type, cv []byte, _ uint64) error {
				if n == 1 && t == protowire.BytesType {
					return decodeCommon(cv, &r.Mutation)
				}
				return nil
			})
		case respRequestTrailers, respResponseTrailers:
			r.Kind = KindRequestTrailers
			if num == respResponseTrailers {
				r.Kind = KindResponseTrailers
			}
			// TrailersResponse: header_mutation (1).
			return walk(v, func(n protowire.Number, t protowire.Type, hv []byte, _ uint64) error {
				if n == 1 && t == protowire.BytesType {
					return decodeHeaderMutation(hv, &r.Mutation.SetHeaders, &r.Mutation.RemoveHeaders)
				}
				return nil
			})
		case respImmediateResponse:
			r.Kind = KindImmediate
			im, err := decodeImmediate(v)
			r.Immediate = im
			return err
		case respDynamicMetadata:
			md, err := decodeStructOfStructs(v)
			r.Metadata = md
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("decode ProcessingResponse: %w", err)
	}
	return r, nil
}

func decodeCommon(b []byte, m *Mutation) error {
	return walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.VarintType:
			m.Status = int(x)
		case num == 2 && typ == protowire.BytesType:
			return decodeHeaderMutation(v, &m.SetHeaders, &m.RemoveHeaders)
		case num == 3 && typ == protowire.BytesType:
			return decodeBodyMutation(v, m)
		case num == 5 && typ == protowire.VarintType:
			m.ClearRouteCache = x != 0
		}
		return nil
	})
}

func decodeBodyMutation(b []byte, m *Mutation) error {
	return walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			m.Replace, m.ReplaceBody = true, append([]byte(nil), v...)
		case num == 2 && typ == protowire.VarintType:
			m.ClearBody = x != 0
		case num == 3 && typ == protowire.BytesType:
			m.Streamed = true
			// StreamedBodyResponse: body (1), end_of_stream (2).
			return walk(v, func(n protowire.Number, t protowire.Type, sv []byte, sx uint64) error {
				switch {
				case n == 1 && t == protowire.BytesType:
					m.StreamedBody = append([]byte(nil), sv...)
				case n == 2 && t == protowire.VarintType:
					m.StreamedEOS = sx != 0
				}
				return nil
			})
		}
		return nil
	})
}

func decodeHeaderMutation(b []byte, set *[]HeaderOption, remove *[]string) error {
	return walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			o, err := decodeHeaderOption(v)
			if err != nil {
				return err
			}
			*set = append(*set, o)
		case 2:
			*remove = append(*remove, string(v))
		}
		return nil
	})
}

func decodeHeaderOption(b []byte) (HeaderOption, error) {
	var o HeaderOption
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, x uint64) error {
		switch {
		case num == 1 && typ == protowire.BytesType:
			h, err := decodeHeaderValue(v)
			o.Header = h
			return err
		case num == 2 && typ == protowire.BytesType:
			// google.protobuf.BoolValue: value (1).
			val := false
			if err := walk(v, func(n protowire.Number, t protowire.Type, _ []byte, bx uint64) error {
				if n == 1 && t == protowire.VarintType {
					val = bx != 0
				}
				return nil
			}); err != nil {
				return err
			}
			o.Append = &val
		case num == 3 && typ == protowire.VarintType:
			o.Action = int(x)
		}
		return nil
	})
	return o, err
}

// decodeHeaderValue prefers raw_value, as Envoy does, and falls back to value.
func decodeHeaderValue(b []byte) (Header, error) {
	var h Header
	var raw, str []byte
	hasRaw := false
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			h.Key = string(v)
		case 2:
			str = v
		case 3:
			raw, hasRaw = v, true
		}
		return nil
	})
	if hasRaw {
		h.Value = string(raw)
	} else {
		h.Value = string(str)
	}
	return h, err
}

func decodeImmediate(b []byte) (*Immediate, error) {
	im := &Immediate{}
	var remove []string
	err := walk(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1: // envoy.type.v3.HttpStatus: code (1), an enum equal to the status
			return walk(v, func(n protowire.Number, t protowire.Type, _ []byte, x uint64) error {
				if n == 1 && t == protowire.VarintType {
					im.Status = int(x)
				}
				return nil
			})
		case 2:
			return decodeHeaderMutation(v, &im.SetHeaders, &remove)
		case 3:
			im.Body = append([]byte(nil), v...)
		case 5:
			im.Details = string(v)
		}
		return nil
	})
	return im, err
}

// decodeStructOfStructs flattens a google.protobuf.Struct whose values are
// Structs of strings (dynamic_metadata: namespace → key → value).
func decodeStructOfStructs(b []byte) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := walkStruct(b, func(key string, val []byte) error {
		inner := map[string]string{}
		err := walk(val, func(n protowire.Number, t protowire.Type, sv []byte, _ uint64) error {
			if n != 5 || t != protowire.BytesType { // Value.struct_value
				return nil
			}
			return walkStruct(sv, func(k string, v []byte) error {
				return walk(v, func(n protowire.Number, t protowire.Type, s []byte, _ uint64) error {
					if n == 3 && t == protowire.BytesType { // Value.string_value
						inner[k] = string(s)
					}
					return nil
				})
			})
		})
		out[key] = inner
		return err
	})
	return out, err
}

// walkStruct calls f for each entry of a Struct's fields map (field 1,
// entries key (1) and value (2)).
func walkStruct(b []byte, f func(key string, value []byte) error) error {
	return walk(b, func(num protowire.Number, typ protowire.Type, entry []byte, _ uint64) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		var key string
		var val []byte
		if err := walk(entry, func(n protowire.Number, t protowire.Type, v []byte, _ uint64) error {
			if t == protowire.BytesType {
				switch n {
				case 1:
					key = string(v)
				case 2:
					val = v
				}
			}
			return nil
		}); err != nil {
			return err
		}
		return f(key, val)
	})
}
