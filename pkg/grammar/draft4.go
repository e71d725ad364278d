package grammar

// Draft 4 (a third of the schemas in the wild still declare it) differs
// from draft 6/7 in two keywords the grammar reads: "id" is the base-URI
// keyword later spelled "$id", and "exclusiveMinimum"/"exclusiveMaximum"
// are booleans that make "minimum"/"maximum" exclusive instead of bounds
// of their own. Everything else the grammar enforces means the same, so a
// draft 4 schema is rewritten into draft 7 form and compiled as draft 7.

// schemaMaps are the keywords whose value maps names to schemas.
var schemaMaps = map[string]bool{"properties": true, "patternProperties": true, "definitions": true, "$defs": true, "dependencies": true}

// schemaLists are the keywords whose value is a list of schemas.
var schemaLists = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "items": true}

// upgradeDraft4 rewrites schema s, and every schema in it, in place.
func upgradeDraft4(s *jv) {
	if s == nil || s.kind != 'o' {
		return
	}
	if id := s.get("id"); id != nil && id.kind == 's' && s.get("$id") == nil {
		for i := range s.obj {
			if s.obj[i].key == "id" {
				s.obj[i].key = "$id"
			}
		}
	}
	exclusive(s, "minimum", "exclusiveMinimum")
	exclusive(s, "maximum", "exclusiveMaximum")
	for _, m := range s.obj {
		switch {
		case m.key == "enum" || m.key == "const" || m.key == "default" || m.key == "examples":
			// data, not schemas
		case schemaMaps[m.key] && m.val.kind == 'o':
			for _, e := range m.val.obj {
				upgradeDraft4(e.val) // a dependencies list of names is left alone
			}
		case schemaLists[m.key] && m.val.kind == 'a':
			for _, e := range m.val.arr {
				upgradeDraft4(e)
			}
		default:
			// additionalProperties, items, not, ... and unknown keywords,
			// which a $ref may still point into.
			upgradeDraft4(m.val)
		}
	}
}

// exclusive turns draft 4's {bound: x, flag: true} into {flag: x}; a
// false flag, or one without its bound, constrains nothing.
func exclusive(s *jv, bound, flag string) {
	f := s.get(flag)
	if f == nil || f.kind != 'b' {
		return
	}
	b := s.get(bound)
	var obj []member
	for _, m := range s.obj {
		switch {
		case m.key == flag:
			if f.b && b != nil {
				obj = append(obj, member{flag, b})
			}
		case m.key == bound && f.b:
			// replaced by the exclusive bound
		default:
			obj = append(obj, m)
		}
	}
	s.obj = obj
}
