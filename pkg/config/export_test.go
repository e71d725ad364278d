package config

// Used only by tests (issue 17: kept out of the shipped binaries).

// ConfigFile returns the --config path ("" when not given).
func (f *Flags) ConfigFile() string { return f.configFile }
