package shmbackend

import (
	"context"

	"github.com/lightllm-go/lightllm/pkg/apiserver"
	"github.com/lightllm-go/lightllm/pkg/metrics"
	"github.com/lightllm-go/lightllm/pkg/rolectl"
)

// webOptions feeds the built-in status page: the roles from the supervisor
// (over the role's controller) and the live load the /metrics gauges show.
func webOptions(ctl *rolectl.Controller, load metrics.LoadFunc) apiserver.WebOptions {
	o := apiserver.WebOptions{Roles: ctl.Status, Load: func() apiserver.Load {
		l := load()
		return apiserver.Load{Waiting: l.Waiting, Running: l.Running, KVUsage: l.KVUsage, KVCapacity: max(l.KVCapacity, 0),
			KVUsed: l.KVUsed, KVCached: l.KVEvictable}
	}}
	if ctl.Supervised() {
		o.RestartRole = func(ctx context.Context, role string) error {
			return ctl.RestartForOperator(ctx, role, "requested on the status page")
		}
	}
	return o
}
