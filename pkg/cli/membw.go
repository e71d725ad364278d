package cli

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/tensor"
)

// newMembwCmd measures memory read bandwidth with the engine's worker pool:
// the denominator of the decode roofline (bytes of weights per token over
// bytes per second) that scripts/bench-cpu.sh reports.
func newMembwCmd() *cobra.Command {
	var (
		threads, sizeMB, passes int
		asJSON                  bool
	)
	cmd := &cobra.Command{
		Use:   "membw",
		Short: "Measure sequential memory read bandwidth with the engine's threads (decode roofline)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := tensor.MemBandwidth(threads, sizeMB<<20, passes)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, err := json.Marshal(map[string]any{"threads": r.Threads, "bytes": r.Bytes, "huge_pages": r.HugePages,
					"read_gb_s_best": round2(r.Best()), "read_gb_s_median": round2(r.Median()),
					"read_gb_s_two_streams_best": round2(slices.Max(r.TwoStreams)), "read_gb_s_far_prefetch_best": round2(slices.Max(r.Far))})
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(out, string(b))
				return err
			}
			_, err = fmt.Fprintf(out, "threads %d, %d MiB (huge pages %v): best %.2f GB/s, median %.2f GB/s over %d passes (two streams: best %.2f; leading the prefetcher: best %.2f)\n",
				r.Threads, sizeMB, r.HugePages, r.Best(), r.Median(), len(r.GBps), slices.Max(r.TwoStreams), slices.Max(r.Far))
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&threads, "threads", 1, "reading threads (0: all cores)")
	f.IntVar(&sizeMB, "size_mb", 512, "buffer size in MiB (several times the last-level cache)")
	f.IntVar(&passes, "passes", 5, "timed passes over the buffer per read pattern (one and two streams per thread)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
