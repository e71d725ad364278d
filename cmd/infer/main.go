// Command infer is the infer role: it loads the model and runs the
// continuous-batching engine over the shm request slots (see pkg/infer).
// `lightllm launch` starts it; it can also run alone with the same flags or
// --config FILE (systemd).
package main

import (
	"os"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/infer"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func main() { os.Exit(rolectl.Main(config.RoleInfer, infer.Run)) }
