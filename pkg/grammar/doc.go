// Package grammar constrains generation to a formal language: it turns a
// JSON Schema, a regular expression, a GBNF grammar or a list of choices into
// a Grammar, and a Matcher walks one request through it token by token,
// computing which tokens of the vocabulary may come next.
//
// # Use
//
//	v := grammar.VocabFromTokenizer(tok)            // once per tokenizer
//	g, err := grammar.CompileJSONSchema(schema, grammar.Options{})
//	// err names the keyword when the schema cannot be enforced
//	m := grammar.NewMatcher(g, v)                   // one per request
//	for {
//		m.FillMask(bits)                          // allowed token ids, EOS only when the text may end
//		tok := sample(logits, bits)
//		if err := m.Accept(tok); err != nil { ... } // tok was not allowed
//		if m.Done() { break }                       // EOS accepted
//	}
//
// A Grammar is safe for concurrent use by many Matchers (what a JSON
// Schema's first mask does not need is built on first use, so a compile
// costs what the first mask needs, plus the checks a refusal depends on); a
// Cache shares compiled grammars between requests (key: hash of the
// canonical spec). A Matcher belongs to one request and is not safe for
// concurrent use, but it may be driven from any goroutine: the intended
// pattern is that a worker goroutine calls FillMask for step t+1 while the
// forward pass of step t runs, and the sampler reads the bits after joining
// the worker. Rollback and Reset let the engine replay accepted tokens after
// a restart or an eviction.
//
// # How
//
// A grammar is a set of rules; each rule is a DFA over bytes whose edges may
// also call other rules (a recursive transition network). A Matcher's state
// is a set of stacks of (rule, DFA state) frames — a set because a union
// (anyOf, alternatives) can be ambiguous for a while. The vocabulary is a
// byte trie laid out in preorder, so a mask is a depth-first walk that skips
// a whole subtree as soon as the grammar rejects its prefix. Three things
// keep that walk short:
//
//   - In a frame that neither calls nor may return (most structural states),
//     a step is one table lookup.
//   - For a rule that calls nothing (strings, numbers, literals, regexes),
//     what its DFA state decides alone is computed once per vocabulary and
//     DFA state: the tokens that stay inside the rule and the trie nodes
//     where the rule may end and the frames below must decide. That cache
//     lives in the Vocab, keyed by a hash of the DFA, so every grammar that
//     uses a plain JSON string shares it.
//   - Masks are memoised per grammar by the exact matcher state.
//
// # JSON Schema
//
// Supported (draft 2020-12, 2019-09, 7, 6 and 4; docs/grammar.md has the
// details): type (incl. unions and "null"), properties (generated in schema
// order), required, additionalProperties (false, true or a schema),
// patternProperties (up to 3 patterns), enum/const (beside any other
// keyword: the listed values that validate), items/prefixItems/minItems/
// maxItems, minLength/maxLength, pattern, format (date-time, date, time,
// duration, uuid, ipv4, ipv6, email, hostname and their idn- forms, uri,
// iri, uri-reference, iri-reference, uri-template, json-pointer,
// relative-json-pointer, regex: sound subsets), minimum/maximum/
// exclusiveMinimum/exclusiveMaximum on integers, minProperties 1, anyOf,
// oneOf (when its branches are provably disjoint), allOf (merged when
// sound), $ref/$defs/definitions (local, incl. recursion), boolean schemas.
// Annotations (title, description, default, examples, $comment...) are
// ignored, as are keywords no draft defines (x-... extensions). Any other
// keyword is refused with an error naming it: the engine never
// under-constrains silently. Whitespace between tokens is allowed but
// bounded (Options.MaxWhitespace) so a sampled model cannot pad forever.
package grammar
