package supervisor

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// checkPorts fails when the API or metric port is already taken, before any
// role starts: the apiserver binds its port last, after infer has loaded
// the model (minutes for a big one), which is too late to learn that.
func checkPorts(cfg *config.Config) error {
	ports := []struct {
		flag string
		port int
	}{{"--port", cfg.Port}, {"--metric_port", cfg.MetricPort}}
	for _, p := range ports {
		if p.port <= 0 {
			continue
		}
		addr := net.JoinHostPort(cfg.Host, strconv.Itoa(p.port))
		// A role of a dead predecessor that cleanup just SIGKILLed may
		// hold the port for a moment more.
		var err error
		for try := 0; try < 10; try++ {
			var l net.Listener
			if l, err = net.Listen("tcp", addr); err == nil {
				l.Close()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("%s %d: cannot listen on %s (another server there?): %w", p.flag, p.port, addr, err)
		}
	}
	return nil
}
