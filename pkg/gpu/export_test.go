package gpu

// Used only by tests (issue 17: kept out of the shipped binaries).

// IndexByUUID returns the NVML index of the GPU with this UUID: what the
// infer role passes to CUDA to use the device health watches.
func IndexByUUID(uuid string) (int, error) {
	d, err := Open(uuid)
	if err != nil {
		return -1, err
	}
	defer d.Close()
	return d.Info().Index, nil
}
