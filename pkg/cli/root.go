// Package cli builds the `lightllm` command tree. Each subcommand lives in its
// own file (run.go, tokenize.go, sim.go, bench.go, ...) as a newXxxCmd
// constructor; NewRoot lists them so there is no package-level state.
package cli

import (
	"github.com/spf13/cobra"
)

// NewRoot returns the root `lightllm` command with every subcommand attached.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "lightllm",
		Short:         "LightLLM (Go): an LLM inference server with one process per role",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCmd(),
		newSimCmd(),
		newTokenizeCmd(),
		newPullCmd(), newListCmd(),
		newRunCmd(), newBenchEngineCmd(),
		newBenchCmd(),
		newGenModelCmd(),
		newLaunchCmd(), newStatusCmd(), newStopCmd(), newRestartCmd(),
		newEPPProxyCmd(),
		newMembwCmd(),
		newBenchGrammarCmd(),
		// Add new subcommand constructors here, one line each.
	)
	return root
}
