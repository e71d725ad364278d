package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

func newStopCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop [--instance NAME]",
		Short: "Stop an instance (default: the one running on this host), or clean up after one that died; exit 1 if none ran",
		Args:  cobra.NoArgs,
	}
	t := addTargetFlags(cmd)
	timeout := cmd.Flags().Duration("timeout", 3*time.Minute, "how long to wait for the instance to stop")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		tgt, in, err := target(cmd.Context(), cmd, t)
		if err != nil {
			return err
		}
		if err := unsupervised(cmd.Context(), tgt, in, "stop it with `systemctl stop lightllm@"+tgt.Instance+".target`"); err != nil {
			return err
		}
		return supervisor.StopInstance(cmd.Context(), tgt, *timeout, cmd.OutOrStdout())
	}
	return cmd
}
