package tokenizer

import "errors"

// ErrUnsupported marks a tokenizer component this package does not implement
// (a normalizer, pre-tokenizer, model or decoder type).
var ErrUnsupported = errors.New("unsupported tokenizer component")
