package grammar

import "errors"

var (
	// ErrUnsupported wraps every refusal of a spec the engine cannot
	// enforce; the message names the keyword or construct.
	ErrUnsupported = errors.New("grammar: unsupported")
	// ErrInvalid wraps malformed specs (bad JSON, bad regex syntax...).
	ErrInvalid = errors.New("grammar: invalid")
	// ErrUnsatisfiable: the spec admits no output at all.
	ErrUnsatisfiable = errors.New("grammar: unsatisfiable")
	// ErrRejected: Accept was given a token the grammar does not allow.
	ErrRejected = errors.New("grammar: token not allowed")
)
