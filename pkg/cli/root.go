// Package cli builds the `lightllm` command tree. Each subcommand lives in its
// own file (run.go, tokenize.go, sim.go, bench.go, ...) as a newXxxCmd
// constructor; NewRoot lists them so there is no package-level state.
package cli

import (
	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/config"
)

// NewRoot returns the root `lightllm` command with every subcommand attached.
func NewRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "lightllm",
		Short:         "LightLLM (Go): an LLM inference server with one process per role",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// One flag style (snake_case, kebab-case accepted) and a "did you
	// mean" on a misspelt flag, for every subcommand.
	root.SetGlobalNormalizationFunc(config.SnakeCase)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return config.SuggestFlag(cmd.Flags(), err) })
	root.AddCommand(
		newVersionCmd(),
		newSimCmd(),
		newTokenizeCmd(),
		newPullCmd(), newListCmd(),
		newRunCmd(), newBenchEngineCmd(),
		newBenchCmd(),
		newGenModelCmd(),
		newLaunchCmd(), newStatusCmd(), newStopCmd(), newRestartCmd(), newPsCmd(),
		newEPPProxyCmd(),
		newMembwCmd(),
		newBenchGrammarCmd(),
		// Add new subcommand constructors here, one line each.
	)
	return root
}
