package tokenizer

import (
	"log/slog"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
)

// Byte-level BPE (GPT-2, Sennrich et al. 2016 with Radford et al. 2019's
// byte mapping) as llama.cpp runs it (llm_tokenizer_bpe_session): the text
// is pre-tokenized into words; each word's bytes start as one symbol each;
// the adjacent pair with the lowest merge rank is merged (ties: leftmost)
// until no pair has a rank. A final symbol that is not a token is written
// as its bytes' tokens.
//
// The model works on raw bytes: token texts are unmapped once at load, so
// encoding never builds the mapped strings. Symbols are ids; a merge whose
// result is not in the vocabulary gets a synthetic id above the vocabulary
// so that the merge order stays exactly the reference's.

type bpeModel struct {
	raw    map[string]int32    // raw bytes -> id (vocabulary and synthetic)
	extra  []string            // raw bytes of synthetic id nvocab+i
	byteID [256]int32          // one raw byte -> its symbol id
	merges map[uint64]bpeMerge // left id<<32 | right id -> merge
	nvocab int32
}

type bpeMerge struct{ rank, id int32 }

func pairKey(l, r int32) uint64 { return uint64(uint32(l))<<32 | uint64(uint32(r)) }

func (m *bpeModel) idOf(raw string) int32 {
	if id, ok := m.raw[raw]; ok {
		return id
	}
	id := m.nvocab + int32(len(m.extra))
	m.extra = append(m.extra, raw)
	m.raw[raw] = id
	return id
}

func newBPEModel(tokens []string, ids map[string]int32, merges []string) *bpeModel {
	m := &bpeModel{raw: make(map[string]int32, len(tokens)), nvocab: int32(len(tokens)),
		merges: make(map[uint64]bpeMerge, len(merges))}
	mapped := make([]bool, len(tokens)) // token text is in the byte mapping
	for id, s := range tokens {
		if raw, ok := unmapBytes(s); ok {
			if _, dup := m.raw[raw]; !dup {
				m.raw[raw] = int32(id)
				mapped[id] = true
			}
		}
	}
	for b := range m.byteID {
		m.byteID[b] = m.idOf(string([]byte{byte(b)}))
	}
	var buf []byte
	for rank, s := range merges {
		sp := -1
		if len(s) > 1 {
			if i := strings.IndexByte(s[1:], ' '); i >= 0 {
				sp = i + 1
			}
		}
		if sp < 0 {
			continue
		}
		le, re := s[:sp], s[sp+1:]
		var key uint64
		var res int32
		// Common case: both parts and the result are tokens; look them
		// up as written, without unmapping.
		buf = append(append(buf[:0], le...), re...)
		lid, okl := ids[le]
		rid, okr := ids[re]
		sid, oks := ids[string(buf)]
		if okl && okr && oks && mapped[lid] && mapped[rid] && mapped[sid] {
			key, res = pairKey(lid, rid), sid
		} else {
			l, okl := unmapBytes(le)
			r, okr := unmapBytes(re)
			if !okl || !okr || l == "" || r == "" {
				continue
			}
			key, res = pairKey(m.idOf(l), m.idOf(r)), -1
			if _, dup := m.merges[key]; !dup {
				res = m.idOf(l + r)
			}
		}
		if _, dup := m.merges[key]; !dup {
			m.merges[key] = bpeMerge{rank: int32(rank), id: res}
		}
	}
	return m
}

// bpeState is per-call scratch, pooled.
type bpeState struct {
	r     runes
	ends  []int
	tmp   []int
	word  []byte
	syms  []int32
	ranks []int32
	ids   []int32
	cache map[string][]int32 // word -> ids, valid for owner only
	owner *bpeModel
	heap  bpeHeap
	nodes []bpeNode
}

// Scratch states (and so their caches) are pooled per tokenizer, so two
// models used in turn do not evict each other's words.
func (t *Tokenizer) getBPEState() *bpeState {
	if s, ok := t.scratch.Get().(*bpeState); ok {
		return s
	}
	return &bpeState{cache: map[string][]int32{}}
}

func (t *Tokenizer) putBPEState(s *bpeState) { t.scratch.Put(s) }

// cacheLimit bounds the per-state word cache.
const cacheLimit = 1 << 16

// encodeBPE appends the tokens of one raw-text fragment.
func (t *Tokenizer) encodeBPE(s *bpeState, text string, out []int) []int {
	s.r.reset(text)
	s.ends, s.tmp = t.pt.split(&s.r, s.ends, s.tmp)
	m := t.bpe
	if s.owner != m {
		clear(s.cache)
		s.owner = m
	}
	lo, pos := 0, 0
	for _, hi := range s.ends {
		var w string
		if s.r.clean {
			// The word is a slice of the text: no copy.
			n := 0
			for _, c := range s.r.cp[lo:hi] {
				n += cptLen(c)
			}
			w = text[pos : pos+n]
			pos += n
		} else {
			buf := s.word[:0]
			for _, c := range s.r.cp[lo:hi] {
				buf = appendCpt(buf, c)
			}
			s.word = buf
			w = string(buf)
		}
		lo = hi
		if len(w) == 0 {
			continue
		}
		if t.ignoreMerges {
			if id, ok := m.raw[w]; ok && id < m.nvocab {
				out = append(out, int(id))
				continue
			}
		}
		if ids, ok := s.cache[w]; ok {
			for _, id := range ids {
				out = append(out, int(id))
			}
			continue
		}
		var syms []int32
		if len(w) <= 48 {
			syms = m.mergeShort(s, w)
		} else {
			syms = m.mergeLong(s, w)
		}
		ids := s.ids[:0]
		for _, id := range syms {
			if id < m.nvocab {
				ids = append(ids, id)
				continue
			}
			// A symbol that is not a token: llama.cpp looks up each byte
			// of its mapped text alone, which finds only the printable
			// ASCII bytes (they map to themselves); the rest are dropped.
			raw := m.extra[id-m.nvocab]
			for i := 0; i < len(raw); i++ {
				if c := raw[i]; c >= '!' && c <= '~' && m.byteID[c] < m.nvocab {
					ids = append(ids, m.byteID[c])
				}
			}
		}
		s.ids = ids
		for _, id := range ids {
			out = append(out, int(id))
		}
		if len(s.cache) >= cacheLimit {
			clear(s.cache)
		}
		s.cache[strings.Clone(w)] = append([]int32(nil), ids...) // w may point into the caller's text
	}
	return out
}

const noRank = int32(1<<31 - 1)

func (m *bpeModel) rank(l, r int32) (int32, int32) {
	if mg, ok := m.merges[pairKey(l, r)]; ok {
		return mg.rank, mg.id
	}
	return noRank, -1
}

// mergeShort runs the merges on a short word with a flat array: ranks[i]
// is the rank of the pair (syms[i], syms[i+1]).
func (m *bpeModel) mergeShort(s *bpeState, w string) []int32 {
	syms, ranks := s.syms[:0], s.ranks[:0]
	for i := 0; i < len(w); i++ {
		syms = append(syms, m.byteID[w[i]])
	}
	for i := 0; i+1 < len(syms); i++ {
		r, _ := m.rank(syms[i], syms[i+1])
		ranks = append(ranks, r)
	}
	for len(syms) > 1 {
		best, bestRank := -1, noRank
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		_, id := m.rank(syms[best], syms[best+1])
		syms[best] = id
		syms = append(syms[:best+1], syms[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best > 0 {
			ranks[best-1], _ = m.rank(syms[best-1], syms[best])
		}
		if best < len(ranks) {
			ranks[best], _ = m.rank(syms[best], syms[best+1])
		}
	}
	s.syms, s.ranks = syms, ranks
	return syms
}

// configureBPE reads the merges and picks the pre-tokenizer.
func (t *Tokenizer) configureBPE(m *gguf.Metadata) error {
	merges, err := m.Strings(keyMerges)
	if err != nil {
		return loadErr(keyMerges, ErrMissing, "%v", err)
	}
	cfg, err := lookupPre(t.pre)
	if err != nil {
		return loadErr(keyPre, err, "known: default, gpt-2, llama3/llama-bpe, qwen2, qwen35, deepseek-llm, deepseek-coder, falcon, mpt, starcoder, refact, gpt-neox (no key), command-r, phi-2, olmo, smollm, gpt-4o/llama4, tekken, deepseek-v3, bloom, viking and aliases")
	}
	if t.pre == "" {
		slog.Warn("tokenizer: no tokenizer.ggml.pre in a byte-level BPE vocabulary; using the default pre-tokenizer (llama.cpp does the same and warns that quality may degrade)")
	}
	t.pt = cfg.pt
	t.ignoreMerges = cfg.ignoreMerges
	if cfg.addBOS {
		t.addBOS = true
	}
	t.bpe = newBPEModel(t.tokens, t.ids, merges)
	return nil
}
