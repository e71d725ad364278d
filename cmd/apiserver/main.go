// Command apiserver is the HTTP front end: LightLLM's native and the
// OpenAI-compatible API (pkg/apiserver) over the shm request path
// (pkg/apiserver/shmbackend). `lightllm launch` starts it; it can also run
// alone with the same flags or --config FILE (systemd).
package main

import (
	"os"

	"github.com/lightllm-go/lightllm/pkg/apiserver/shmbackend"
	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func main() { os.Exit(rolectl.Main(config.RoleAPIServer, shmbackend.Run)) }
