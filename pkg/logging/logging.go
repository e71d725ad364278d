// Package logging builds the zerolog logger every process uses: JSON lines by
// default, a human console format when stderr is a terminal, each line tagged
// with role, instance and pid. Loggers are returned, never installed globally.
package logging

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// EnvFormat lets the supervisor tell its children which format to use: their
// stderr is a pipe, but it ends on the supervisor's terminal.
const EnvFormat = "LIGHTLLM_LOG_FORMAT"

// Formats.
const (
	FormatAuto    = "auto"
	FormatJSON    = "json"
	FormatConsole = "console"
)

// Options configure New.
type Options struct {
	Role     string    // "supervisor", "router", ...
	Instance string    // the instance name
	Level    string    // trace|debug|info|warn|error ("" = info)
	Format   string    // auto|json|console ("" = auto)
	Out      io.Writer // default os.Stderr
}

// New returns a logger for one process.
func New(o Options) (zerolog.Logger, error) {
	lvl := zerolog.InfoLevel
	if o.Level != "" {
		l, err := zerolog.ParseLevel(o.Level)
		if err != nil {
			return zerolog.Nop(), fmt.Errorf("log level %q: %w", o.Level, err)
		}
		lvl = l
	}
	out := o.Out
	if out == nil {
		out = os.Stderr
	}
	format, err := ResolveFormat(o.Format, out)
	if err != nil {
		return zerolog.Nop(), err
	}
	if format == FormatConsole {
		out = zerolog.ConsoleWriter{Out: out, TimeFormat: "15:04:05.000", NoColor: !IsTerminal(out)}
	}
	ctx := zerolog.New(out).Level(lvl).Hook(timestampHook{}).With()
	if o.Role != "" {
		ctx = ctx.Str("role", o.Role)
	}
	if o.Instance != "" {
		ctx = ctx.Str("instance", o.Instance)
	}
	return ctx.Int("pid", os.Getpid()).Logger(), nil
}

// ResolveFormat turns "auto" into json or console: the supervisor's choice in
// $LIGHTLLM_LOG_FORMAT if set, else console exactly when out is a terminal.
func ResolveFormat(format string, out io.Writer) (string, error) {
	switch format {
	case FormatJSON, FormatConsole:
		return format, nil
	case "", FormatAuto:
		if env := os.Getenv(EnvFormat); env == FormatJSON || env == FormatConsole {
			return env, nil
		}
		if IsTerminal(out) {
			return FormatConsole, nil
		}
		return FormatJSON, nil
	}
	return "", fmt.Errorf("log format %q unknown (auto|json|console)", format)
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// timestampHook stamps each event with millisecond UTC time without touching
// zerolog's package-level TimeFieldFormat (which is seconds by default).
type timestampHook struct{}

func (timestampHook) Run(e *zerolog.Event, _ zerolog.Level, _ string) {
	e.Str(zerolog.TimestampFieldName, time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00"))
}
