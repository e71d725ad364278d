package ipc

import "testing"

func TestZMQEndpoint(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"ipc goes through the raw transport", "ipc:///run/lightllm-8000/router.sock", "rawipc:///run/lightllm-8000/router.sock"},
		{"other schemes are left alone", "tcp://127.0.0.1:5555", "tcp://127.0.0.1:5555"},
		{"not an endpoint", "router.sock", "router.sock"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := zmqEndpoint(c.in); got != c.want {
				t.Fatalf("zmqEndpoint(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}
