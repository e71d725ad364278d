package eppproxy

import "errors"

// Sentinel errors; wrapped errors carry the details.
var (
	// ErrPicker: the endpoint picker could not be reached, failed the call,
	// or did not decide within the pick timeout.
	ErrPicker = errors.New("endpoint picker unavailable")
	// ErrProtocol: the picker answered out of protocol (a message of the
	// wrong kind, or a body mutation other than streamed_response).
	ErrProtocol = errors.New("ext_proc protocol violation")
	// ErrNoDestination: the picker routed without naming an endpoint.
	ErrNoDestination = errors.New("no destination endpoint")
)

// Names shared with the EPP and Envoy.
const (
	// NamespaceLB is the dynamic-metadata namespace of the destination.
	NamespaceLB = "envoy.lb"
	// DestinationEndpointKey is the header (and metadata key) in which the
	// picker names the endpoint: "ip:port", or several, comma separated,
	// in order of preference.
	DestinationEndpointKey = "x-gateway-destination-endpoint"
	// ServedEndpointKey is the metadata key under which the gateway tells
	// the picker which endpoint served the request. The proxy also returns
	// it to the client as a response header, so that tests can see where
	// each request went.
	ServedEndpointKey = "x-gateway-destination-endpoint-served"
)
