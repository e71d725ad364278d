package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

func newRestartCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:       "restart ROLE [--instance NAME]",
		Short:     "Restart one role of a running instance (" + strings.Join(config.AllRoles(), ", ") + ")",
		Args:      cobra.ExactArgs(1),
		ValidArgs: config.AllRoles(),
	}
	t := addTargetFlags(cmd)
	noWait := cmd.Flags().Bool("no-wait", false, "return once the restart is requested")
	timeout := cmd.Flags().Duration("timeout", 5*time.Minute, "how long to wait for the new process to be ready")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		tgt, in, err := target(cmd.Context(), cmd, t)
		if err != nil {
			return err
		}
		if err := unsupervised(cmd.Context(), tgt, in, "restart it with `systemctl restart lightllm-"+args[0]+"@"+tgt.Instance+".service`"); err != nil {
			return err
		}
		return supervisor.RestartRole(cmd.Context(), tgt, args[0], !*noWait, *timeout, cmd.OutOrStdout())
	}
	return cmd
}
