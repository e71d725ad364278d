package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

func newStopCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop [--instance NAME]",
		Short: "Stop an instance (or clean up after one that died)",
		Args:  cobra.NoArgs,
	}
	t := addTargetFlags(cmd)
	timeout := cmd.Flags().Duration("timeout", 3*time.Minute, "how long to wait for the instance to stop")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		return supervisor.StopInstance(cmd.Context(), *t, *timeout, cmd.OutOrStdout())
	}
	return cmd
}
