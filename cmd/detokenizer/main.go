// Command detokenizer is the detokenizer role: incremental detokenization
// and stop strings between infer and the apiserver (see pkg/detok).
// `lightllm launch` starts it; it can also run alone with the same flags or
// --config FILE (systemd).
package main

import (
	"os"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/detok"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

func main() { os.Exit(rolectl.Main(config.RoleDetokenizer, detok.Run)) }
