package cli

import (
	"encoding/json"
	"time"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

// addTargetFlags registers the flags that name an instance.
func addTargetFlags(cmd *cobra.Command) *supervisor.Target {
	t := &supervisor.Target{}
	cmd.Flags().StringVar(&t.Instance, "instance", "", "instance name (default: the port)")
	cmd.Flags().IntVar(&t.Port, "port", 8000, "HTTP port of the instance, when --instance is not given (with neither: the one instance running here)")
	cmd.Flags().StringVar(&t.RunDir, "run_dir", "", "run directory (default: found from the instance's lock file in its shm dir)")
	cmd.Flags().StringVar(&t.ShmDir, "shm_dir", "", "shm directory, if the instance was launched with --shm_dir")
	return t
}

func newStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [--instance NAME]",
		Short: "Show each role's pid, state, uptime and restarts (default: the instance running on this host)",
		Args:  cobra.NoArgs,
	}
	t := addTargetFlags(cmd)
	asJSON := cmd.Flags().Bool("json", false, "print the raw status as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		tgt, in, err := target(cmd.Context(), cmd, t)
		if err != nil {
			return err
		}
		st, err := supervisor.QueryStatus(cmd.Context(), tgt)
		if isNotRunning(err) {
			// No supervisor: systemd units may run it; their roles are in shm.
			if in == nil {
				in, _ = supervisor.Inspect(cmd.Context(), tgt)
			}
			if in != nil && in.Manager == supervisor.ManagerSystemd {
				st, err = in.Status, nil
			}
		}
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(st)
		}
		return supervisor.WriteStatus(cmd.OutOrStdout(), st, time.Now())
	}
	return cmd
}
