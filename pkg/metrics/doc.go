// Package metrics is the metric side of a lightllm instance.
//
//   - Client: what every role uses to report metrics. Counter / Gauge /
//     Observe queue an event and return at once; one goroutine batches
//     queued events into a ZeroMQ PUSH message to the metric role. When the
//     metric role is down the queue (4096 events, as LightLLM's) fills and
//     further events are dropped and counted, so serving is never slowed;
//     the drop count reaches the metric role as
//     lightllm_metric_events_dropped_total{role} once it is back.
//   - Server / Run: the metric role. A PULL socket at
//     ipc://<run_dir>/metric.sock feeds a client_golang registry with
//     LightLLM's metric names and buckets (prefix lightllm_, label
//     model_name), served as Prometheus text on --metric_port and pushed to
//     --metric_gateway every --push_interval when set. Role restart counts
//     are read from the supervisor at scrape time.
//   - NewLiveCollector / APIHandler: the three live gauges the Gateway API
//     Inference Extension routes on (waiting, running, KV usage 0..1) plus a
//     cache-config info gauge, read from shm at scrape time, for the
//     apiserver to serve on the API port (optionally under vLLM's names).
//
// Who sends what (names.go has the full list):
//
//	apiserver  request_count/success/failure, prompt/generation tokens,
//	           input length, max new tokens, generated tokens, TTFT,
//	           per-token time, inference and request duration, cache length/ratio,
//	           cache hit rate, gen throughput
//	router     queue size, running, batch size, paused, current max tokens,
//	           queue duration, oldest wait
//	infer      KV usage, preemptions, evicted cache tokens, step count/duration by method
//
// The wire format of one message is in event.go. The ZeroMQ adapters in
// transport.go carry the PUSH/PULL workarounds this channel needs; they are
// behind the Pusher/Puller interfaces so pkg/ipc can replace them.
package metrics
