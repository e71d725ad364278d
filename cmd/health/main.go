// Command health is the health role of a lightllm instance (installed as
// lightllm-health): it probes the API, watches role heartbeats, engine
// progress and the GPU (NVML, --gpu_uuid), and asks the supervisor to
// restart the role at fault after --health_failures failed checks. Its
// status is served on <run_dir>/health.sock (/-/healthy, /-/ready, /status).
package main

import (
	"os"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/health"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func main() { os.Exit(rolectl.Main(config.RoleHealth, health.Run)) }
