package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// maxConfigBytes bounds what Load reads: a config is a few KiB.
const maxConfigBytes = 1 << 20

// Load reads a JSON config file over DefaultConfig (keys absent from the file
// keep their defaults). Unknown keys are an error, so a misspelt key in
// /etc/lightllm/<instance>.json is reported instead of silently ignored.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("load config %s: file is %d bytes, larger than %d", path, len(b), maxConfigBytes)
	}
	cfg := DefaultConfig()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("load config %s: %w", path, err)
	}
	return &cfg, nil
}

// Save writes the config as indented JSON, atomically (temp file + rename),
// so a role reading it never sees half a file.
func (c *Config) Save(path string) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("save config: %w", err)
	}
	b = append(b, '\n')
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("save config %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.json")
	if err != nil {
		return fmt.Errorf("save config %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save config %s: %w", path, err)
	}
	mode := os.FileMode(0o644)
	if len(c.APIKey) > 0 {
		mode = 0o600 // the keys are secrets
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("save config %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save config %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save config %s: %w", path, err)
	}
	return nil
}

// inputKey identifies an unresolved configuration: two processes given the
// same flags/file get the same key.
func (c *Config) inputKey() string {
	in := *c
	in.Resolved, in.ResolvedKey, in.KVBytesPerToken = false, "", 0
	b, _ := json.Marshal(in) // a Config always marshals
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// LoadShared resolves cfg the way every process of the instance agrees on.
// A config that is already resolved (the file `lightllm launch` writes and
// passes with --config) is returned as is. Otherwise, under a lock in the run
// directory, the first process to arrive resolves it and saves it as
// <run_dir>/config.json; later processes with the same input (same flags or
// same file contents) read that back instead of resolving again, so roles
// started by hand or by systemd see the same derived values (KV capacity
// measured once, the same metric port) as under launch.
func LoadShared(cfg *Config, opts ResolveOptions) (*Config, error) {
	if cfg.Resolved {
		return cfg, cfg.Validate()
	}
	return resolveLocked(cfg, opts, true)
}

// ResolveAndSave resolves cfg afresh and saves it as <run_dir>/config.json
// (what `lightllm launch --prepare-only` does before systemd starts the
// roles); roles later given the same input reuse it through LoadShared.
func ResolveAndSave(cfg *Config, opts ResolveOptions) (*Config, error) {
	return resolveLocked(cfg, opts, false)
}

func resolveLocked(cfg *Config, opts ResolveOptions, reuse bool) (*Config, error) {
	c := *cfg
	c.Resolved, c.ResolvedKey = false, ""
	if err := c.FillNames(); err != nil {
		return nil, err
	}
	key := c.inputKey()
	if err := os.MkdirAll(c.RunDir, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	lockPath := filepath.Join(c.RunDir, LockFileName)
	lock, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open config lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockPath, err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	// A missing, corrupt or differently-keyed file is simply replaced.
	if saved, err := Load(c.ConfigPath()); reuse && err == nil && saved.Resolved && saved.ResolvedKey == key {
		return saved, saved.Validate()
	}
	res, err := Resolve(&c, opts)
	if err != nil {
		return nil, err
	}
	res.ResolvedKey = key
	if err := res.Save(res.ConfigPath()); err != nil {
		return nil, err
	}
	return res, nil
}
