package config

import (
	"encoding/json"
	"net/url"
	"os"

	"github.com/rs/zerolog"
)

// Redacted returns a copy with secrets removed: the user:password part of
// the Pushgateway URL and the API keys.
func (c *Config) Redacted() Config {
	r := *c
	if len(c.APIKey) > 0 {
		r.APIKey = []string{"REDACTED"}
	}
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

// EnvAPIKey holds API keys (comma separated) in addition to --api_key, so
// that a systemd unit can pass them through EnvironmentFile= instead of a
// world-readable config file.
const EnvAPIKey = "LIGHTLLM_API_KEY"

// APIKeys are the bearer tokens the API requires: api_key plus
// $LIGHTLLM_API_KEY; empty when neither is set.
func (c *Config) APIKeys() []string {
	keys := append([]string(nil), c.APIKey...)
	var env []string
	_ = strList{&env}.Set(os.Getenv(EnvAPIKey))
	return append(keys, env...)
}
