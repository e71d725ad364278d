package grammar

import "fmt"

// Strings with length bounds are built as automata directly: unrolling
// {min,max} copies of a character into an NFA and determinizing costs
// milliseconds at lengths of a few hundred.

// repeatChar is the DFA of between min and max (max >= 0) texts of char,
// a DFA of one character: its accepting states end the character and lead
// nowhere. It keeps char's byte classes.
func repeatChar(char *dfa, min, max int) (*dfa, error) {
	nc, ncls := char.states(), char.ncls
	for q := 0; q < nc; q++ {
		if char.accept[q] {
			for c := 0; c < ncls; c++ {
				if char.trans[q*ncls+c] >= 0 {
					return nil, fmt.Errorf("character automaton continues after a character")
				}
			}
		}
	}
	if (max+1)*nc > maxDFAStates {
		return nil, fmt.Errorf("automaton over %d states", maxDFAStates)
	}
	// State (i, c): i characters done, c inside the next one.
	n := (max + 1) * nc
	d := &dfa{cls: char.cls, ncls: ncls, trans: make([]int32, n*ncls), accept: make([]bool, n), calls: make([][]callEdge, n)}
	for i := 0; i <= max; i++ {
		for c := 0; c < nc; c++ {
			q := i*nc + c
			d.accept[q] = c == 0 && i >= min
			for k := 0; k < ncls; k++ {
				d.trans[q*ncls+k] = -1
				t := char.trans[c*ncls+k]
				switch {
				case t < 0 || char.accept[c] || i == max: // at max no character may start
				case char.accept[t]:
					d.trans[q*ncls+k] = int32((i + 1) * nc)
				default:
					d.trans[q*ncls+k] = int32(i*nc) + t
				}
			}
		}
	}
	d.finish() // every state can still complete: no trimming needed
	return d, nil
}

// quoted is the DFA of '"' content '"'. The content of a JSON string never
// has a raw quote at a character boundary, so the closing quote is
// unambiguous.
func quoted(content *dfa) *dfa {
	// Classes: content's, with '"' split off.
	var cls [256]uint8
	oldOf := []int{}
	newID := map[int]uint8{}
	for b := 0; b < 256; b++ {
		k := int(content.cls[b]) * 2
		if b == '"' {
			k++
		}
		id, ok := newID[k]
		if !ok {
			id = uint8(len(oldOf))
			newID[k] = id
			oldOf = append(oldOf, int(content.cls[b]))
		}
		cls[b] = id
	}
	quote := int(cls['"'])
	ncls, n := len(oldOf), content.states()
	d := &dfa{cls: cls, ncls: ncls, trans: make([]int32, (n+2)*ncls), accept: make([]bool, n+2), calls: make([][]callEdge, n+2)}
	for i := range d.trans {
		d.trans[i] = -1
	}
	d.trans[quote] = 1
	for q := 0; q < n; q++ {
		for k := 0; k < ncls; k++ {
			if t := content.trans[q*content.ncls+oldOf[k]]; t >= 0 {
				d.trans[(q+1)*ncls+k] = t + 1
			}
		}
		if content.accept[q] {
			d.trans[(q+1)*ncls+quote] = int32(n + 1)
		}
	}
	d.accept[n+1] = true
	d.finish() // content is trimmed, so is this
	return d
}
