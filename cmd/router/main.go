// Command router is the router role: the Past-Future scheduler between the
// apiserver and infer (see pkg/router). `lightllm launch` starts it; it can
// also run alone with the same flags or --config FILE (systemd).
package main

import (
	"os"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/router"
)

func main() { os.Exit(rolectl.Main(config.RoleRouter, router.Run)) }
