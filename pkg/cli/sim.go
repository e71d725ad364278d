package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/lightllm-go/lightllm/pkg/sched"
	"github.com/lightllm-go/lightllm/pkg/sim"
)

func newSimCmd() *cobra.Command {
	var (
		policy, dist, trace string
		requests            int
		seed                uint64
		rate                float64
		asJSON              bool
		maxNew              int
		o                   = sim.DefaultOptions(120000)
		pf                  sched.PastFutureOptions
	)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Simulate the router's admission policies on a workload",
		Long: `Simulate the router's scheduler (the same admission code the router role runs) on a
built-in distribution or a JSONL trace of {input_len, output_len, arrival_s}, with a
model of engine step time. True output lengths are hidden from every policy except
oracle until the request's EOS step. --policy all compares every policy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dist != "" && trace != "" {
				return errors.New("sim: give --dist or --trace, not both")
			}
			if trace != "" && !cmd.Flags().Changed("requests") {
				requests = 0 // a trace runs whole unless cut explicitly
			}
			items, err := simWorkload(dist, trace, requests, seed, rate)
			if err != nil {
				return err
			}
			o.Seed, o.MaxNewTokens, o.PastFuture = seed, maxNew, pf
			policies := []string{policy}
			if policy == "all" {
				policies = sched.PolicyNames()
			}
			var results []*sim.Result
			for _, p := range policies {
				o.Policy = p
				res, err := sim.Run(o, items)
				if err != nil {
					return fmt.Errorf("sim %s: %w", p, err)
				}
				results = append(results, res)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				for _, r := range results {
					if err := enc.Encode(r); err != nil {
						return err
					}
				}
				return nil
			}
			return printSimTable(cmd.OutOrStdout(), results)
		},
	}
	f := cmd.Flags()
	f.StringVar(&policy, "policy", sched.PolicyPastFuture, "admission policy: "+strings.Join(sched.PolicyNames(), ", ")+", or all")
	f.StringVar(&dist, "dist", "", "built-in distribution: "+strings.Join(sim.DistNames(), ", ")+" (default dist1)")
	f.StringVar(&trace, "trace", "", "JSONL trace file of {input_len, output_len, arrival_s[, max_new_tokens]}")
	f.IntVar(&requests, "requests", 3000, "number of requests for --dist; with --trace, keep only the first N (default: the whole trace)")
	f.Uint64Var(&seed, "seed", 1, "seed for the workload and the policy's sampling")
	f.Float64Var(&rate, "rate", 0, "Poisson arrival rate in requests/s for --dist (0 = all arrive at t=0)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per policy")
	f.IntVar(&maxNew, "max_new_tokens", 0, "override every request's max_new_tokens (0 = the workload's cap)")
	f.IntVar(&o.Config.MaxTotalTokens, "max_total_tokens", o.Config.MaxTotalTokens, "KV capacity in tokens")
	f.IntVar(&o.Config.RunningMaxReqSize, "running_max_req_size", o.Config.RunningMaxReqSize, "max running requests")
	f.IntVar(&o.Config.BatchMaxTokens, "batch_max_tokens", o.Config.BatchMaxTokens, "prefill tokens per step")
	f.IntVar(&o.Config.ChunkedPrefillSize, "chunked_prefill_size", o.Config.ChunkedPrefillSize, "prefill chunk size")
	f.IntVar(&o.Config.RouterMaxWaitTokens, "router_max_wait_tokens", o.Config.RouterMaxWaitTokens, "decode steps between prefills")
	f.Float64Var(&o.Config.RouterTokenRatio, "router_token_ratio", o.Config.RouterTokenRatio, "KV usage above which past_future_ema reserves max_new_tokens")
	f.IntVar(&pf.Window, "pf_window", 40, "past_future: finished output lengths kept")
	f.IntVar(&pf.MaxScenarios, "pf_scenarios", 5, "past_future: max sampled scenarios per pass")
	f.Float64Var(&pf.CapacityRatio, "pf_capacity_ratio", 0.97, "past_future: share of KV the worst scenario may reach")
	f.Float64Var(&o.SLA.TTFTS, "sla_ttft_s", o.SLA.TTFTS, "SLA: time to first token (s)")
	f.Float64Var(&o.SLA.MaxITLS, "sla_max_itl_s", o.SLA.MaxITLS, "SLA: largest inter-token gap (s)")
	f.Float64Var(&o.Model.DecodeBaseS, "decode_base_s", o.Model.DecodeBaseS, "step model: decode step fixed cost (s)")
	f.Float64Var(&o.Model.DecodePerKVTokenS, "decode_per_kv_token_s", o.Model.DecodePerKVTokenS, "step model: decode cost per KV token (s)")
	f.Float64Var(&o.Model.PrefillPerTokenS, "prefill_per_token_s", o.Model.PrefillPerTokenS, "step model: prefill cost per token (s)")
	return cmd
}

func simWorkload(dist, trace string, n int, seed uint64, rate float64) ([]sim.Item, error) {
	if trace == "" {
		if dist == "" {
			dist = sim.DistDecodeHeavy
		}
		return sim.Dist(dist, n, seed, rate)
	}
	if n < 0 {
		return nil, fmt.Errorf("sim: --requests %d", n)
	}
	items, err := sim.LoadTrace(trace)
	if err != nil {
		return nil, err
	}
	if n > 0 && n < len(items) {
		items = items[:n]
	}
	return items, nil
}

func printSimTable(w io.Writer, results []*sim.Result) error {
	var oracle int64
	for _, r := range results {
		if r.Policy == sched.PolicyOracle {
			oracle = r.DecodeSteps
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tdecode_steps\tvs_oracle\tevictions\tevicted_reqs\tmean_kv\tduration_s\tttft_p50_s\tttft_p99_s\tmax_itl_p99_s\tgoodput_tok_s\tsla_met\t")
	for _, r := range results {
		ratio := "-"
		if oracle > 0 {
			ratio = fmt.Sprintf("%.3f", float64(r.DecodeSteps)/float64(oracle))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%.3f\t%.0f\t%.2f\t%.2f\t%.3f\t%.1f\t%d/%d\t\n", r.Policy, r.DecodeSteps, ratio,
			r.Evictions, r.EvictedRequests, r.MeanKVUsage, r.DurationS, r.TTFTP50S, r.TTFTP99S, r.MaxITLP99S, r.GoodputTokS, r.SLAMet, r.Requests)
	}
	return tw.Flush()
}
