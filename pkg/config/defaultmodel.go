package config

import "errors"

// ErrNoModel is returned when no model was given and there is no default.
var ErrNoModel = errors.New("no model: pass --model_dir DIR (a Hugging Face model directory or a .gguf file)")

// DefaultModel is the hook for a built-in default model, used when
// --model_dir is empty. It returns the local path of the model to serve.
//
// TODO(pkg/hub owner): fill this in with the Hub download (resolve a
// documented default repository, download it into the cache, return the
// snapshot path). Until then it fails with a one-line hint.
func DefaultModel() (string, error) {
	return "", ErrNoModel
}
