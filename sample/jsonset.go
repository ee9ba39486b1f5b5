package sample

import "slices"

// jsonSet is the recognizer of a schema's values: every reading of the
// text so far that the schema allows, one jsonState each. A schema whose
// unions one byte decides has one reading. A fork union's value (an
// anyOf of two objects, say) is read once per alternative that may start
// it, and a reading ends when its alternative fails; readings that become
// the same are merged. This is how a nondeterministic automaton is run
// (Thompson, "Regular expression search algorithm", CACM 1968): the set
// of states, advanced together.
type jsonSet struct {
	sts  []jsonState
	next []jsonState // step's other buffer
}

// maxReadings bounds a set: past it, further readings are dropped. Each
// kept one is still a valid prefix that can be completed, so the output
// stays valid; only values that only a dropped reading allowed are lost.
// Real schemas stay far below it (readings merge when a union's value
// closes).
const maxReadings = 64

func newJSONSet(s *Schema) jsonSet { return jsonSet{sts: []jsonState{newJSONState(s)}} }

// complete reports whether some reading is a whole value.
func (r *jsonSet) complete() bool {
	return slices.ContainsFunc(r.sts, func(s jsonState) bool { return s.complete() })
}

// done reports whether every reading is closed (nothing may follow).
func (r *jsonSet) done() bool {
	return !slices.ContainsFunc(r.sts, func(s jsonState) bool { return s.mode != jDone })
}

// feed advances every reading over p; false if none continues.
func (r *jsonSet) feed(p string) bool {
	for i := 0; i < len(p); i++ {
		if !r.step(p[i]) {
			return false
		}
	}
	return true
}

// step advances every reading over c, a fork union's value starting at
// c once per alternative; false if none continues. The readings' pushed
// frames must be empty (each owns its stack: own).
func (r *jsonSet) step(c byte) bool {
	out := r.next[:0]
	for i := range r.sts {
		s := &r.sts[i]
		t := *s
		ok := t.step(c)
		if t.forks == 0 {
			if ok {
				out = addReading(out, t)
			}
			continue
		}
		for k := int32(1); k <= t.forks; k++ {
			u := *s
			u.force = k
			if u.step(c) {
				u.force = 0
				out = addReading(out, u)
			}
		}
	}
	r.sts, r.next = out, r.sts[:0]
	return len(out) > 0
}

// addReading adds t to set unless an equal reading is there (or the set is
// full). t's pushed frames join a stack of its own.
func addReading(set []jsonState, t jsonState) []jsonState {
	if len(t.pushed) > 0 {
		own(&t)
	}
	for i := range set {
		if set[i].jcore == t.jcore && slices.Equal(set[i].stack, t.stack) {
			return set
		}
	}
	if len(set) >= maxReadings {
		return set
	}
	return append(set, t)
}

// own gives st a stack of its own (its stack, then its pushed frames),
// so that readings that shared a parent's may be advanced apart.
func own(st *jsonState) {
	ns := make([]frame, 0, len(st.stack)+len(st.pushed)+4)
	st.stack = append(append(ns, st.stack...), st.pushed...)
	st.pushed = nil
}

// readsAs reports whether p continues st's text as a set of readings
// (Mask's trial of a token whose text begins a fork union's value).
func readsAs(st *jsonState, p string) bool {
	r := jsonSet{sts: []jsonState{*st}}
	r.sts[0].pushed = nil
	return r.feed(p)
}

// clone returns a copy of r that may be advanced apart from it.
func (r *jsonSet) clone() jsonSet { return jsonSet{sts: slices.Clone(r.sts)} }
