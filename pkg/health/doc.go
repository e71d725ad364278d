// Package health is the health role: it watches a running instance and asks
// the supervisor to restart the role at fault, instead of killing the whole
// server as LightLLM's health monitor does.
//
// Every --health_interval one check runs:
//   - roles: each role's readiness and heartbeat (from the supervisor, or
//     from shm when there is none); a ready role silent for longer than
//     --heartbeat_timeout is unhealthy;
//   - engine, when every pipeline role is ready: while requests run or wait,
//     LightLLM's passive rule (the last progress in shm must be younger than
//     --health_timeout, counted from when the engine became busy); while idle,
//     a real generation of one token through the API (POST /generate);
//   - GPU, with --gpu_uuid and NVML: XID and ECC errors, row remapping,
//     temperature, and on the CUDA backend that infer holds a context on the
//     device (pkg/gpu).
//
// Each finding names the role a restart would fix. After --health_failures
// consecutive failed checks of one role, the monitor asks the supervisor to
// restart that role (infer for a wedged engine) and starts counting again;
// a role with a new process, or a passing check, resets its count.
//
// Apart from that cycle, a stall watch reads the loop heartbeats of router,
// infer and detokenizer in shm every half second: a role whose process is
// alive but whose loop has not turned for --stall_timeout (a SIGSTOP, a
// wedge) is reported unhealthy at once (report, status file, metric, one log
// line when the stall starts and one when it ends), within --stall_timeout
// plus half a second, whatever a probe in flight is waiting for. The
// apiserver's /health turns 503 on the same records. Stall findings do not
// count towards a restart: a forward step longer than --stall_timeout on a
// big model is no fault, and a real wedge is restarted by the supervisor's
// --heartbeat_timeout.
//
// The status is typed (Healthy, Degraded, Unhealthy) and readiness is
// separate: see Report and Handler.
package health
