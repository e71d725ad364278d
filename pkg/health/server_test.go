package health

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestHandler(t *testing.T) {
	r := newRig(t)
	srv := httptest.NewServer(Handler(r.m))
	defer srv.Close()
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	type want struct {
		healthy, ready int
	}
	steps := []struct {
		name  string
		setup func()
		want  want
	}{
		{"before the first check", func() {}, want{200, 503}},
		{"healthy", func() { r.m.Check(context.Background()) }, want{200, 200}},
		{"unhealthy", func() { r.probeErr = errors.New("x"); r.step(t) }, want{503, 503}},
		{"starting role", func() { r.probeErr = nil; r.role("router").Ready = false; r.step(t) }, want{200, 503}},
	}
	for _, st := range steps {
		st.setup()
		if code, body := get("/-/healthy"); code != st.want.healthy {
			t.Errorf("%s: /-/healthy %d %q, want %d", st.name, code, body, st.want.healthy)
		}
		if code, body := get("/-/ready"); code != st.want.ready {
			t.Errorf("%s: /-/ready %d %q, want %d", st.name, code, body, st.want.ready)
		}
		code, body := get("/status")
		var rep Report
		if err := json.Unmarshal([]byte(body), &rep); code != 200 || err != nil {
			t.Errorf("%s: /status %d %v", st.name, code, err)
		}
	}
}
