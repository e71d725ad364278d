// Command lightllm is the supervisor and CLI: launch, status, stop, restart,
// run, tokenize, sim, bench and friends. All logic lives in pkg/cli.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/lightllm-go/lightllm/pkg/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.NewRoot().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "lightllm:", err)
		os.Exit(1)
	}
}
