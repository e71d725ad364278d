package supervisor

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// takePorts fails when the API or metric port is already taken, before any
// role starts: the apiserver would bind its port last, after infer has
// loaded the model (minutes for a big one), which is too late to learn
// that. It keeps the API port's listening socket and returns it: every
// apiserver gets a copy (config.EnvListenFD), so that a restarted one
// takes over the same socket, the kernel queueing connections in between,
// and old and new can serve side by side (zero-gap restart). Nil when
// --port is 0 (the apiserver chooses).
func takePorts(cfg *config.Config) (*os.File, error) {
	var api *os.File
	ports := []struct {
		flag string
		port int
		keep bool
	}{{"--port", cfg.Port, true}, {"--metric_port", cfg.MetricPort, false}}
	for _, p := range ports {
		if p.port <= 0 {
			continue
		}
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(p.port))
		// A role of a dead predecessor that cleanup just SIGKILLed may
		// hold the port for a moment more.
		var (
			l   net.Listener
			err error
		)
		for try := 0; try < 10; try++ {
			if l, err = net.Listen("tcp", addr); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			if api != nil {
				api.Close()
			}
			return nil, fmt.Errorf("%s %d: cannot listen on %s (another server there?): %w", p.flag, p.port, addr, err)
		}
		if p.keep {
			f, ferr := l.(*net.TCPListener).File() // a dup: the socket stays open after l.Close
			if ferr != nil {
				l.Close()
				return nil, fmt.Errorf("%s %d: %w", p.flag, p.port, ferr)
			}
			api = f
		}
		l.Close()
	}
	return api, nil
}
