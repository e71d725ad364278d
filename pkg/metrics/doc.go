// Package metrics is the metric side of a lightllm instance.
//
//   - Client: what every role uses to report metrics. Counter / Gauge /
//     Observe queue one ipc.Metric on an ipc.OptionalPusher and return at
//     once; while the metric role is down or slow the queue (4096 events,
//     as LightLLM's) fills and further events are dropped and counted, so
//     serving is never slowed. Each client reports its drop count as
//     lightllm_metric_events_dropped{role}.
//   - Server / Run: the metric role. An ipc.Puller at
//     <run_dir>/metric.sock feeds a client_golang registry with LightLLM's
//     metric names and buckets (prefix lightllm_, label model_name, added
//     here: senders do not set it), served as Prometheus text on
//     --metric_port and pushed to --metric_gateway every --push_interval
//     when set. Role restart counts are read from the supervisor at scrape
//     time, so they survive a restart of the metric role itself.
//   - NewLiveCollector / APIHandlerWith: the three live gauges the Gateway
//     API Inference Extension routes on (waiting, running, KV usage 0..1)
//     plus a cache-config info gauge, read from shm at every scrape, for the
//     apiserver to serve on the API port (also under vLLM's names with
//     --metrics_vllm_compat), followed by the metric role's text, fetched at
//     most every 500 ms and shared by concurrent scrapes, so a 50 ms scrape
//     loop costs well under a millisecond and a hung metric role cannot
//     stall it.
//
// Who sends what (names.go has the full list and help strings):
//
//	apiserver  request_count/success/failure, prompt/generation tokens,
//	           input length, max new tokens, generated tokens, TTFT,
//	           per-token time, inference and request duration, cache
//	           length/ratio, cache hit rate, gen throughput; the health
//	           role's probes (header X-Lightllm-Health-Probe: 1) are left out
//	router     queue size, running, batch size, paused, current max tokens,
//	           queue duration (probes included: the router cannot tell
//	           them apart), oldest wait
//	infer      KV usage, preemptions, step count and duration by method
//	           (prefill/decode), prompt-cache tokens evicted for room
//	health     health status, GPU memory/utilization/temperature/ECC
//
// A sender uses the name constants; an event the registry does not know, of
// the wrong kind or with the wrong label is rejected and counted in
// lightllm_metric_events_rejected_total{reason}, never applied.
package metrics
