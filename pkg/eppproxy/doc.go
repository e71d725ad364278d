// Package eppproxy is a small HTTP reverse proxy that routes each request
// the way an inference gateway does: it asks an Endpoint Picker (the EPP of
// the Gateway API Inference Extension, now llm-d/llm-d-router) over the
// Envoy ext_proc gRPC protocol where to send the request, and forwards it to
// the endpoint the picker names in x-gateway-destination-endpoint. It stands
// in for Envoy in local scale-out tests (scripts/scaleout-local.sh) and for
// small deployments without a gateway.
//
// It plays Envoy's part of the protocol with the processing mode the
// gateways configure for the EPP (request and response headers SEND, both
// bodies FULL_DUPLEX_STREAMED):
//
//	request_headers (+ protocol_config) → request_body… (eos)
//	    ← request_headers response: header mutations, the destination
//	    ← request_body responses: the (possibly rewritten) body, streamed
//	    or ← immediate_response: answered to the client as is (429, 503…)
//	forward to the destination (next one in a comma list if it refuses)
//	response_headers (:status, metadata envoy.lb served endpoint) →
//	    ← response_headers response: header mutations
//	response_body chunks… (eos) → ← streamed body responses → client
//
// Streaming the response through the picker is what lets the EPP account
// for each request (in-flight load, prefix-cache index, usage) exactly as
// behind Envoy.
//
// Why not grpc-go and go-control-plane: the generated ext_proc types pull in
// google.golang.org/grpc, github.com/envoyproxy/go-control-plane/envoy
// (config/core, type, extensions… several hundred generated files),
// cncf/xds, protoc-gen-validate and golang.org/x/net, for eight small
// messages. This package encodes those messages with protowire (already a
// dependency through google.golang.org/protobuf) and speaks gRPC's framing
// over net/http's HTTP/2 client (h2c or TLS). wire_test.go pins the
// encoding against bytes produced by go-control-plane v1.37.0.
//
// What is left out: request/response trailers (HTTP/1.1 clients send none),
// mode_override, and body modes other than FULL_DUPLEX_STREAMED.
package eppproxy
