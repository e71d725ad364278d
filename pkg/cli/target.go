package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/rolectl"
	"github.com/lightllm-go/lightllm/pkg/supervisor"
)

// target is the instance a status/stop/restart command means: the one its
// flags name, or, with none of them, the one running on this host (found
// from the shm dirs, whatever its port). It also returns how the instance
// is managed when that was looked up (nil otherwise).
func target(ctx context.Context, cmd *cobra.Command, t *supervisor.Target) (supervisor.Target, *supervisor.Instance, error) {
	for _, f := range []string{"instance", "port", "run_dir", "shm_dir"} {
		if cmd.Flags().Changed(f) {
			return *t, nil, nil
		}
	}
	in, err := supervisor.FindRunning(ctx)
	if err != nil {
		return *t, nil, err
	}
	return supervisor.Target{Instance: in.Name, RunDir: in.RunDir, ShmDir: in.ShmDir}, in, nil
}

// unsupervised explains why a command that talks to a supervisor cannot act
// on an instance systemd runs; nil when a supervisor runs it.
func unsupervised(ctx context.Context, t supervisor.Target, in *supervisor.Instance, what string) error {
	if in == nil {
		found, err := supervisor.Inspect(ctx, t)
		if err != nil {
			return nil //nolint:nilerr // let the command report its own error
		}
		in = found
	}
	if in.Manager != supervisor.ManagerSystemd {
		return nil
	}
	return fmt.Errorf("instance %s has no supervisor (systemd units run it): %s: %w", in.Name, what, errUnsupervised)
}

var errUnsupervised = errors.New("not under lightllm launch")

// isNotRunning reports an instance that is not running.
func isNotRunning(err error) bool { return errors.Is(err, rolectl.ErrNotRunning) }
