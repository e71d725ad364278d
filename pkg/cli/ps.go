package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

func newPsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List the instances on this host: under lightllm launch, under systemd, or stale leftovers",
		Long: "Lists every instance with a shm directory (${LIGHTLLM_SHM_DIR:-/dev/shm}/lightllm-*): its manager\n" +
			"(launch: a supervisor answers; systemd: roles alive without one; stale: nothing alive, `lightllm stop\n" +
			"--instance NAME` cleans up), address, roles up, uptime and model.",
		Args: cobra.NoArgs,
	}
	asJSON := cmd.Flags().Bool("json", false, "print the instances as JSON")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		all, err := supervisor.Discover(cmd.Context())
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			return enc.Encode(all)
		}
		if len(all) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "no instances on this host")
			return nil
		}
		return supervisor.WritePs(cmd.OutOrStdout(), all, time.Now())
	}
	return cmd
}
