package eppproxy

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// hopByHop headers belong to one connection and are never forwarded
// (RFC 9110 §7.6.1).
var hopByHop = map[string]bool{
	"connection": true, "keep-alive": true, "proxy-authenticate": true,
	"proxy-authorization": true, "proxy-connection": true, "te": true,
	"trailer": true, "transfer-encoding": true, "upgrade": true,
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// requestHeaders is what Envoy sends for a request: the pseudo-headers,
// then every end-to-end header lower-cased, one entry per value.
func requestHeaders(r *http.Request, bodyLen int) []Header {
	hs := []Header{
		{":authority", r.Host},
		{":method", r.Method},
		{":path", r.URL.RequestURI()},
		{":scheme", "http"},
	}
	hs = append(hs, flatten(r.Header)...)
	if bodyLen > 0 {
		hs = append(hs, Header{"content-length", strconv.Itoa(bodyLen)})
	}
	return append(hs, Header{"x-forwarded-proto", "http"})
}

// responseHeaders is what Envoy sends for a response.
func responseHeaders(resp *http.Response) []Header {
	hs := []Header{{":status", strconv.Itoa(resp.StatusCode)}}
	hs = append(hs, flatten(resp.Header)...)
	if resp.ContentLength >= 0 && resp.Header.Get("Content-Length") == "" {
		hs = append(hs, Header{"content-length", strconv.FormatInt(resp.ContentLength, 10)})
	}
	return hs
}

func flatten(h http.Header) []Header {
	var hs []Header
	for _, k := range sortedKeys(h) {
		lk := strings.ToLower(k)
		if hopByHop[lk] {
			continue
		}
		for _, v := range h[k] {
			hs = append(hs, Header{lk, v})
		}
	}
	return hs
}

// endToEnd copies h without hop-by-hop headers (and those Connection names).
func endToEnd(h http.Header) http.Header {
	out := h.Clone()
	for _, c := range h.Values("Connection") {
		for _, name := range strings.Split(c, ",") {
			out.Del(strings.TrimSpace(name))
		}
	}
	for k := range out {
		if hopByHop[strings.ToLower(k)] {
			out.Del(k)
		}
	}
	return out
}

// applyMutation applies a HeaderMutation the way Envoy's ext_proc filter
// does: removals first, then sets, where a set replaces unless it asks to
// append. Pseudo-headers, Host, hop-by-hop headers and Content-Length
// (which the proxy computes from the body it sends) are not mutable.
func applyMutation(h http.Header, set []HeaderOption, remove []string) {
	mutable := func(k string) bool {
		lk := strings.ToLower(k)
		return lk != "" && !strings.HasPrefix(lk, ":") && lk != "host" && lk != "content-length" && !hopByHop[lk]
	}
	for _, k := range remove {
		if mutable(k) {
			h.Del(k)
		}
	}
	for _, o := range set {
		if !mutable(o.Key) {
			continue
		}
		exists := len(h.Values(o.Key)) > 0
		switch {
		case o.Append != nil && *o.Append:
			h.Add(o.Key, o.Value)
		case o.Append == nil && o.Action == addIfAbsent:
			if !exists {
				h.Set(o.Key, o.Value)
			}
		case o.Append == nil && o.Action == overwriteIfExists:
			if exists {
				h.Set(o.Key, o.Value)
			}
		default: // replace (append unset or false, or the overwrite actions)
			h.Set(o.Key, o.Value)
		}
	}
}

// destinations reads the picker's choice: the header first, the
// dynamic-metadata key as Envoy's ORIGINAL_DST cluster would otherwise.
func destinations(set []HeaderOption, md map[string]map[string]string) ([]string, error) {
	raw := ""
	for _, o := range set {
		if strings.EqualFold(o.Key, DestinationEndpointKey) {
			raw = o.Value
		}
	}
	if raw == "" {
		raw = md[NamespaceLB][DestinationEndpointKey]
	}
	if raw == "" {
		return nil, ErrNoDestination
	}
	var eps []string
	for _, ep := range strings.Split(raw, ",") {
		ep = strings.TrimSpace(ep)
		host, port, err := net.SplitHostPort(ep)
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w: bad endpoint %q in %s", ErrNoDestination, ep, DestinationEndpointKey)
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("%w: bad port in %q", ErrNoDestination, ep)
		}
		eps = append(eps, ep)
	}
	return eps, nil
}

// newRequestID returns 16 random bytes in hex, as Envoy generates
// x-request-id when the client sends none.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
