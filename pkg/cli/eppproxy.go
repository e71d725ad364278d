package cli

import (
	"fmt"
	"net"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/eppproxy"
)

func newEPPProxyCmd() *cobra.Command {
	var (
		o      eppproxy.Options
		listen string
		grace  time.Duration
		debug  bool
	)
	cmd := &cobra.Command{
		Use:   "epp-proxy --picker HOST:PORT [--listen ADDR]",
		Short: "Route requests with a Gateway API Inference Extension endpoint picker (ext_proc), without Envoy",
		Long: `epp-proxy is a small reverse proxy that asks an Endpoint Picker (the EPP of
llm-d-router / the Gateway API Inference Extension) over Envoy's ext_proc gRPC
protocol where to send each request, and forwards it to the endpoint the picker
names in x-gateway-destination-endpoint. Responses stream back through the
picker, as behind Envoy, so its load and prefix-cache accounting stay exact.
Each response carries x-gateway-destination-endpoint-served. See docs/scaling.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			level := zerolog.InfoLevel
			if debug {
				level = zerolog.DebugLevel
			}
			o.Logger = zerolog.New(os.Stderr).Level(level).With().Timestamp().Logger()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("epp-proxy: listen %s: %w", listen, err)
			}
			return eppproxy.Serve(cmd.Context(), ln, o, grace)
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:8080", "address to serve clients on")
	f.StringVar(&o.PickerAddr, "picker", "127.0.0.1:9002", "the EPP's ext_proc address (its --grpc-port)")
	f.BoolVar(&o.PickerTLS, "picker-tls", false, "the EPP serves TLS (its default --secure-serving=true)")
	f.BoolVar(&o.PickerInsecureSkipVerify, "picker-insecure-skip-verify", false, "accept the EPP's self-signed certificate")
	f.DurationVar(&o.PickTimeout, "pick-timeout", 2*time.Minute, "how long to wait for the picker's decision")
	f.Int64Var(&o.MaxBodyBytes, "max-body-bytes", 16<<20, "largest request body accepted")
	f.StringVar(&o.FailureMode, "failure-mode", eppproxy.FailClose, "FailClose (picker failure → 503) or FailOpen (use --fallback)")
	f.StringSliceVar(&o.FallbackEndpoints, "fallback", nil, "endpoints (ip:port) used round-robin when the picker fails, with FailOpen")
	f.DurationVar(&grace, "shutdown-grace", 30*time.Second, "on SIGTERM, how long in-flight requests may finish")
	f.BoolVar(&debug, "debug", false, "log every request")
	return cmd
}
