package config

import (
	"encoding/json"
	"net/url"

	"github.com/rs/zerolog"
)

// Redacted returns a copy with secrets removed: the user:password part of
// the Pushgateway URL.
func (c *Config) Redacted() Config {
	r := *c
	if u, err := url.Parse(c.MetricGateway); err == nil && u.User != nil {
		u.User = url.User("REDACTED")
		r.MetricGateway = u.String()
	}
	return r
}

// LogEffective logs the effective configuration, secrets redacted, as one
// line at level lvl (the launcher uses info; each role, debug).
func (c *Config) LogEffective(log zerolog.Logger, lvl zerolog.Level) {
	r := c.Redacted()
	b, err := json.Marshal(&r)
	if err != nil {
		log.Error().Err(err).Msg("marshal effective configuration")
		return
	}
	log.WithLevel(lvl).RawJSON("config", b).Msg("effective configuration")
}
