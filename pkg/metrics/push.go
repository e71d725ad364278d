package metrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/rs/zerolog"
)

// pusher pushes the registry to a Pushgateway (--metric_gateway) every
// interval and once more when stopping, as LightLLM's push_to_gateway loop
// does (a PUT: the group is replaced each time). Credentials go in the URL
// (http://user:pass@host:9091); net/http sends them as basic auth.
type pusher struct {
	p        *push.Pusher
	interval time.Duration
	log      zerolog.Logger
}

func newPusher(url, job, instance string, interval time.Duration, g prometheus.Gatherer, log zerolog.Logger) (*pusher, error) {
	if job == "" {
		return nil, fmt.Errorf("metric gateway %s: empty --job_name", url)
	}
	if interval <= 0 {
		return nil, fmt.Errorf("metric gateway %s: --push_interval must be positive, got %v", url, interval)
	}
	p := push.New(url, job).Gatherer(g).Grouping("instance", instance)
	return &pusher{p: p, interval: interval, log: log}, nil
}

func (p *pusher) run(ctx context.Context) {
	t := time.NewTicker(p.interval)
	defer t.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.Background(), p.interval)
			if err := p.p.PushContext(fctx); err != nil {
				p.log.Warn().Err(err).Msg("final push to metric gateway")
			}
			cancel()
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, p.interval)
		err := p.p.PushContext(pctx)
		cancel()
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			p.log.Warn().Err(err).Msg("push to metric gateway failed (logged once until it recovers)")
			failing = true
		case err == nil && failing:
			p.log.Info().Msg("push to metric gateway recovered")
			failing = false
		}
	}
}
