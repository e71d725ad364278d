// Command metric is the metric role of a lightllm instance (installed as
// lightllm-metric): it receives metric events from every role over ZeroMQ
// and serves them as Prometheus text on --metric_port, pushing them to
// --metric_gateway when set. The supervisor starts it first; it can also run
// as a systemd unit with --config <run_dir>/config.json.
package main

import (
	"os"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func main() { os.Exit(rolectl.Main(config.RoleMetric, metrics.Run)) }
