package tokenizer

import "sort"

// trie finds every special token occurring at a position of a text.
type trie struct {
	root  [256]int32 // first byte -> node, 0 if none
	nodes []trieNode // nodes[0] is unused
}

type trieNode struct {
	next map[byte]int32
	id   int32 // token ending here, -1 if none
}

func newTrie() *trie { return &trie{nodes: make([]trieNode, 1)} }

func (tr *trie) empty() bool { return len(tr.nodes) == 1 }

func (tr *trie) insert(s string, id int32) {
	if s == "" {
		return
	}
	n := tr.child(&tr.root[s[0]])
	for i := 1; i < len(s); i++ {
		if tr.nodes[n].next == nil {
			tr.nodes[n].next = map[byte]int32{}
		}
		m, ok := tr.nodes[n].next[s[i]]
		if !ok {
			m = tr.newNode()
			tr.nodes[n].next[s[i]] = m
		}
		n = m
	}
	tr.nodes[n].id = id
}

func (tr *trie) child(slot *int32) int32 {
	if *slot == 0 {
		*slot = tr.newNode()
	}
	return *slot
}

func (tr *trie) newNode() int32 {
	tr.nodes = append(tr.nodes, trieNode{id: -1})
	return int32(len(tr.nodes) - 1)
}

// occurrences returns the start of every occurrence of every token in
// text, grouped by token; positions ascend within a token.
func (tr *trie) occurrences(text string) map[int32][]int32 {
	occ := map[int32][]int32{}
	for p := 0; p < len(text); p++ {
		n := tr.root[text[p]]
		for q := p + 1; n != 0; q++ {
			if id := tr.nodes[n].id; id >= 0 {
				occ[id] = append(occ[id], int32(p))
			}
			if q >= len(text) || tr.nodes[n].next == nil {
				break
			}
			n = tr.nodes[n].next[text[q]]
		}
	}
	return occ
}

// fragment is a piece of the input: raw text (id < 0) or a special token.
type fragment struct {
	id         int32
	start, end int // byte range of raw text
}

// partition cuts special tokens out of text the way llama.cpp's
// tokenizer_st_partition does: tokens are taken in priority order
// (longest text first); each one splits every remaining raw fragment at its
// leftmost non-overlapping occurrences, and its lstrip/rstrip attributes
// swallow ASCII whitespace next to it. The result is the same; the
// occurrences are found in one pass over the text instead of one per token.
func (t *Tokenizer) partition(text string, parseSpecial bool, out []fragment) []fragment {
	tr := t.specialUser
	if parseSpecial {
		tr = t.specialAll
	}
	if len(text) == 0 {
		return out
	}
	if tr.empty() {
		return append(out, fragment{id: -1, start: 0, end: len(text)})
	}
	occ := tr.occurrences(text)
	if len(occ) == 0 {
		return append(out, fragment{id: -1, start: 0, end: len(text)})
	}
	ids := make([]int32, 0, len(occ))
	for id := range occ {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return t.specialPrio[ids[a]] < t.specialPrio[ids[b]] })
	// used[i]: 0 free text, 1 taken by a token, 2 stripped whitespace.
	used := make([]uint8, len(text))
	var taken []fragment
	for _, id := range ids {
		l, lastEnd := len(t.tokens[id]), -1
		a := t.attrs[id]
		for _, p32 := range occ[id] {
			p := int(p32)
			if p < lastEnd || !allFree(used[p:p+l]) {
				continue
			}
			for i := p; i < p+l; i++ {
				used[i] = 1
			}
			taken = append(taken, fragment{id: id, start: p, end: p + l})
			lastEnd = p + l
			if a&attrLstrip != 0 {
				for i := p - 1; i >= 0 && used[i] == 0 && isSpaceASCII(text[i]); i-- {
					used[i] = 2
				}
			}
			if a&attrRstrip != 0 {
				for i := p + l; i < len(text) && used[i] == 0 && isSpaceASCII(text[i]); i++ {
					used[i] = 2
					lastEnd = i + 1
				}
			}
		}
	}
	sort.Slice(taken, func(a, b int) bool { return taken[a].start < taken[b].start })
	k := 0
	for i := 0; i < len(text); {
		switch used[i] {
		case 1:
			out = append(out, taken[k])
			i = taken[k].end
			k++
		case 2:
			i++
		default:
			j := i
			for j < len(text) && used[j] == 0 {
				j++
			}
			out = append(out, fragment{id: -1, start: i, end: j})
			i = j
		}
	}
	return out
}

func allFree(u []uint8) bool {
	for _, x := range u {
		if x != 0 {
			return false
		}
	}
	return true
}

// isSpaceASCII is C's isspace in the "C" locale.
func isSpaceASCII(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }
