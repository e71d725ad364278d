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
		return supervisor.RestartRole(cmd.Context(), *t, args[0], !*noWait, *timeout, cmd.OutOrStdout())
	}
	return cmd
}
