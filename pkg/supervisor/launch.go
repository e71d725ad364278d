package supervisor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/lightllm-go/lightllm/pkg/config"
	"github.com/lightllm-go/lightllm/pkg/logging"
)

// LaunchOptions adjust Launch.
type LaunchOptions struct {
	// Resolve must match what the role binaries use (rolectl.MainOptions).
	Resolve config.ResolveOptions
	// PrepareOnly resolves the configuration, saves it as
	// <run_dir>/config.json, creates the shm directory and returns: what the
	// systemd instance unit runs before the role units start.
	PrepareOnly bool
	Stdout      io.Writer // --check-config and --prepare-only output
	Stderr      io.Writer // logs
}

// Launch is `lightllm launch`: resolve the configuration once, log it, and
// run the supervisor until ctx is cancelled (SIGTERM/SIGINT), `lightllm
// stop`, or a fatal error.
func Launch(ctx context.Context, flags *config.Flags, o LaunchOptions) error {
	signal.Ignore(syscall.SIGPIPE) // see Run: a lost log reader must not kill the launcher
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	cfg, err := flags.Config()
	if err != nil {
		return err
	}
	if flags.CheckOnly() {
		res, err := config.Resolve(cfg, o.Resolve)
		if err != nil {
			return err
		}
		r := res.Redacted()
		b, _ := json.MarshalIndent(&r, "", "  ")
		fmt.Fprintf(o.Stdout, "%s\n", b)
		return nil
	}
	if o.PrepareOnly {
		res, err := config.ResolveAndSave(cfg, o.Resolve)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(res.ShmDir, 0o700); err != nil {
			return fmt.Errorf("create shm dir: %w", err)
		}
		fmt.Fprintf(o.Stdout, "instance %s: configuration saved to %s\n", res.Instance, res.ConfigPath())
		return nil
	}
	res, err := config.Resolve(cfg, o.Resolve)
	if err != nil {
		return err
	}
	log, err := logging.New(logging.Options{Role: "supervisor", Instance: res.Instance, Level: res.LogLevel, Format: res.LogFormat, Out: o.Stderr})
	if err != nil {
		return err
	}
	res.LogEffective(log, zerolog.InfoLevel)
	sup, err := New(Options{Config: res, Log: log, Output: o.Stderr})
	if err != nil {
		return err
	}
	return sup.Run(ctx)
}
