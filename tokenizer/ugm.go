package tokenizer

import (
	"math"
	"slices"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
)

// SentencePiece's unigram model (Kudo 2018, "Subword Regularization",
// arXiv:1804.10959) as sentencepiece encodes it (unigram_model.cc,
// Model::EncodeOptimized; sentencepiece_processor.cc): the normalized text
// is cut into the pieces whose scores (log probabilities) have the largest
// sum, by Viterbi over byte positions. At every character the pieces
// starting there are found in a trie; a character that no piece of its own
// length covers gets an unknown node scored min(score) − 10. User-defined
// pieces score len·max(score) − 0.1, which makes them always win; unused
// pieces are never chosen. Ties keep the path found first (the one whose
// last piece starts earliest). Scores add as sentencepiece adds them: a
// piece's candidate sum in float64, rounded to float32 when stored, an
// unknown node's in float32.
//
// Afterwards an unknown piece becomes its bytes' <0xNN> pieces when the
// model has byte fallback; without it a run of unknown pieces is one
// unknown id, as sentencepiece merges them.

// ugmUnkPenalty is kUnkPenalty.
const ugmUnkPenalty = 10.0

// ugmModel is the unigram-specific part of a Tokenizer.
type ugmModel struct {
	trie         *pieceTrie // normal, user-defined and unused pieces
	norm         normalizer
	types        []spPieceType // id -> piece type
	minScore     float32       // over normal pieces
	maxScore     float32       // over normal pieces, at least FLT_MIN as sentencepiece starts it
	unk          int32
	byteFallback bool
	bytes        [256]int32 // byte -> <0xNN> piece, with byteFallback
}

// ugmNode is the best path ending at a byte position.
type ugmNode struct {
	score float32
	start int32 // start of the path's last piece, -1 if none reaches here
	id    int32
}

// encodeUGM appends the ids of text: normalized, then segmented.
func (t *Tokenizer) encodeUGM(text string, out []int) ([]int, error) {
	u := t.ugm
	s, err := u.norm.normalize(text)
	if err != nil {
		return nil, &Error{Op: "encode", Err: err}
	}
	if s == "" {
		return out, nil
	}
	best := make([]ugmNode, len(s)+1)
	for i := range best {
		best[i].start = -1
	}
	unkScore := u.minScore - ugmUnkPenalty
	for start := 0; start < len(s); {
		here := best[start].score
		mblen := min(int(utf8Len(s[start])), len(s)-start)
		single := false
		for node, k := int32(0), start; k < len(s); {
			node = u.trie.child(node, s[k])
			if node < 0 {
				break
			}
			k++
			id := u.trie.nodes[node].id
			if id < 0 || u.types[id] == spUnused {
				continue
			}
			length := k - start
			var score float64
			if u.types[id] == spUserDefined {
				score = float64(float32(length)*u.maxScore) - 0.1
			} else {
				score = float64(t.scores[id])
			}
			cand := score + float64(here)
			if tgt := &best[k]; tgt.start < 0 || cand > float64(tgt.score) {
				*tgt = ugmNode{score: float32(cand), start: int32(start), id: id}
			}
			if length == mblen {
				single = true
			}
		}
		if !single {
			cand := unkScore + here
			if tgt := &best[start+mblen]; tgt.start < 0 || cand > tgt.score {
				*tgt = ugmNode{score: cand, start: int32(start), id: u.unk}
			}
		}
		start += mblen
	}
	// Backtrack, then emit in order.
	var path []int32 // end positions, last first
	for end := len(s); end > 0; end = int(best[end].start) {
		path = append(path, int32(end))
	}
	prevUnk := false
	for i := len(path) - 1; i >= 0; i-- {
		end := int(path[i])
		n := best[end]
		isUnk := n.id == u.unk
		switch {
		case isUnk && u.byteFallback:
			for _, b := range []byte(s[n.start:end]) {
				out = append(out, int(u.bytes[b]))
			}
		case isUnk && prevUnk:
			// merged into the previous unknown piece
		default:
			out = append(out, int(n.id))
		}
		prevUnk = isUnk
	}
	return out, nil
}

// pieceTrie is a byte trie whose children are contiguous and sorted by
// label, built once from sorted keys.
type pieceTrie struct {
	nodes []ptNode // nodes[0] is the root
}

type ptNode struct {
	first int32 // index of the first child
	n     int32 // number of children
	id    int32 // key ending here, -1 if none
	label byte
}

// newPieceTrie builds the trie of keys (non-empty, distinct) with their ids.
func newPieceTrie(keys []string, ids []int32) *pieceTrie {
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	tr := &pieceTrie{nodes: []ptNode{{id: -1}}}
	type span struct {
		node   int32
		lo, hi int
		depth  int
	}
	queue := []span{{node: 0, lo: 0, hi: len(order)}}
	for len(queue) > 0 {
		sp := queue[0]
		queue = queue[1:]
		lo := sp.lo
		if lo < sp.hi && len(keys[order[lo]]) == sp.depth {
			tr.nodes[sp.node].id = ids[order[lo]]
			lo++
		}
		first := int32(len(tr.nodes))
		for i := lo; i < sp.hi; {
			c := keys[order[i]][sp.depth]
			j := i + 1
			for j < sp.hi && keys[order[j]][sp.depth] == c {
				j++
			}
			child := int32(len(tr.nodes))
			tr.nodes = append(tr.nodes, ptNode{id: -1, label: c})
			queue = append(queue, span{node: child, lo: i, hi: j, depth: sp.depth + 1})
			i = j
		}
		tr.nodes[sp.node].first = first
		tr.nodes[sp.node].n = int32(len(tr.nodes)) - first
	}
	return tr
}

// child returns node's child labelled c, or -1.
func (tr *pieceTrie) child(node int32, c byte) int32 {
	nd := &tr.nodes[node]
	lo, hi := nd.first, nd.first+nd.n
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		if l := tr.nodes[m].label; l < c {
			lo = m + 1
		} else if l > c {
			hi = m
		} else {
			return m
		}
	}
	return -1
}

// longestPrefix returns the length of the longest key that is a prefix of
// s, or 0.
func (tr *pieceTrie) longestPrefix(s string) int {
	best := 0
	node := int32(0)
	for k := 0; k < len(s); k++ {
		if node = tr.child(node, s[k]); node < 0 {
			break
		}
		if tr.nodes[node].id >= 0 {
			best = k + 1
		}
	}
	return best
}

// FromSentencePiece builds a tokenizer from a SentencePiece model file
// (a serialized ModelProto: spiece.model, tokenizer.model, or the bytes
// ComfyUI stores in a T5 checkpoint's spiece_model tensor). Only unigram
// models are supported. Encode with addSpecial appends EOS (</s>), as T5's
// tokenizers do; no BOS is added. Control pieces in the text are plain
// text unless Encode is asked to parse special text.
func FromSentencePiece(data []byte) (*Tokenizer, error) {
	m, err := parseSPModel(data)
	if err != nil {
		return nil, &Error{Op: "load", Key: "sentencepiece model", Err: err}
	}
	return fromSPModel(m)
}

func spLoadErr(sentinel error, format string, args ...any) error {
	return loadErr("sentencepiece model", sentinel, format, args...)
}

func fromSPModel(m *spModel) (*Tokenizer, error) {
	switch m.modelType {
	case spUnigram:
	case spBPE, spWord, spChar:
		name := map[int32]string{spBPE: "BPE", spWord: "WORD", spChar: "CHAR"}[m.modelType]
		return nil, spLoadErr(ErrUnsupported, "model type %s (only UNIGRAM is supported)", name)
	default:
		return nil, spLoadErr(ErrInvalid, "model type %d (want 1..4)", m.modelType)
	}
	n := len(m.pieces)
	if n == 0 {
		return nil, spLoadErr(ErrInvalid, "no pieces")
	}
	texts := make([]string, n)
	scores := make([]float32, n)
	types := make([]spPieceType, n)
	for i, p := range m.pieces {
		texts[i], scores[i], types[i] = p.text, p.score, p.typ
	}
	norm := normalizer{dummyPrefix: m.addDummyPrefix, removeSpace: m.removeExtraSpace,
		escape: m.escapeSpace, suffix: m.treatWSAsSuffix}
	var err error
	if norm.trie, norm.repl, err = newCharsmap(m.charsmap); err != nil {
		return nil, spLoadErr(ErrInvalid, "%v", err)
	}
	return newUGM(texts, scores, types, norm, m.byteFallback, ugmIDs{bos: m.bosID, eos: m.eosID, pad: m.padID})
}

type ugmIDs struct{ bos, eos, pad int32 }

// newUGM builds a unigram Tokenizer from its pieces, checking them as
// sentencepiece's ModelInterface::InitializePieces does.
func newUGM(texts []string, scores []float32, types []spPieceType, norm normalizer, byteFallback bool, special ugmIDs) (*Tokenizer, error) {
	n := len(texts)
	t := &Tokenizer{kind: kindUGM, model: "t5", eot: none, eom: none, sep: none,
		fim: [3]int{none, none, none}, fimPSM: [3]int{none, none, none}}
	// sentencepiece starts max_score_ at FLT_MIN, the smallest normal float.
	u := &ugmModel{types: types, unk: none, byteFallback: byteFallback,
		minScore: math.MaxFloat32, maxScore: 0x1p-126}
	for i := range u.bytes {
		u.bytes[i] = none
	}
	t.tokens, t.scores = texts, scores
	t.attrs = make([]attr, n)
	t.ids = make(map[string]int32, n)
	reserved := map[string]int32{}
	var keys, users []string
	var keyIDs, userIDs []int32
	for i, s := range texts {
		if s == "" {
			return nil, spLoadErr(ErrInvalid, "piece %d is empty", i)
		}
		typ := types[i]
		normal := typ == spNormal || typ == spUserDefined || typ == spUnused
		if normal {
			if j, dup := t.ids[s]; dup {
				return nil, spLoadErr(ErrInvalid, "piece %q has ids %d and %d", s, j, i)
			}
			t.ids[s] = int32(i)
			keys, keyIDs = append(keys, s), append(keyIDs, int32(i))
		} else {
			if j, dup := reserved[s]; dup {
				return nil, spLoadErr(ErrInvalid, "piece %q has ids %d and %d", s, j, i)
			}
			reserved[s] = int32(i)
		}
		switch typ {
		case spNormal:
			t.attrs[i] = attrNormal
			u.minScore = min(u.minScore, scores[i])
			u.maxScore = max(u.maxScore, scores[i])
		case spUserDefined:
			t.attrs[i] = attrUserDefined
			users, userIDs = append(users, s), append(userIDs, int32(i))
		case spUnused:
			t.attrs[i] = attrUnused
		case spControl:
			t.attrs[i] = attrControl
		case spUnknown:
			if u.unk != none {
				return nil, spLoadErr(ErrInvalid, "unknown pieces %d and %d (want one)", u.unk, i)
			}
			u.unk = int32(i)
			t.attrs[i] = attrUnknown
		case spByte:
			if !byteFallback {
				return nil, spLoadErr(ErrInvalid, "byte piece %q (id %d) but byte fallback is off", s, i)
			}
			b, ok := parseBytePiece(s)
			if !ok {
				return nil, spLoadErr(ErrInvalid, "byte piece %q (id %d) is not <0xNN>", s, i)
			}
			u.bytes[b] = int32(i)
			t.attrs[i] = attrByte
		default:
			return nil, spLoadErr(ErrInvalid, "piece %d has type %d", i, typ)
		}
	}
	for s, id := range reserved {
		if _, ok := t.ids[s]; !ok {
			t.ids[s] = id
		}
	}
	if u.unk == none {
		return nil, spLoadErr(ErrInvalid, "no unknown piece")
	}
	if byteFallback {
		for b, id := range u.bytes {
			if id == none {
				return nil, spLoadErr(ErrInvalid, "byte fallback but no piece <0x%02X>", b)
			}
		}
	}
	if len(keys) == 0 {
		return nil, spLoadErr(ErrInvalid, "no normal, user-defined or unused pieces")
	}
	u.trie = newPieceTrie(keys, keyIDs)
	if len(users) > 0 {
		norm.user = newPieceTrie(users, userIDs)
	}
	u.norm = norm
	t.ugm = u
	t.unk = int(u.unk)
	inRange := func(id int32) int {
		if id < 0 || int(id) >= n {
			return none
		}
		return int(id)
	}
	t.bos, t.eos, t.pad = inRange(special.bos), inRange(special.eos), inRange(special.pad)
	t.addEOS = t.eos != none
	t.addSpacePrefix = norm.dummyPrefix && !norm.suffix
	t.buildEOG()
	t.buildSpecial()
	// User-defined pieces are matched by the normalizer and the Viterbi
	// search, as in sentencepiece, not cut out of the text beforehand.
	t.specialUser = newTrie()
	t.buildPieces()
	return t, nil
}

// parseBytePiece reads "<0xNN>" with upper-case hex digits, the only
// spelling sentencepiece's PieceToByte knows.
func parseBytePiece(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range []byte(s[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// GGUF keys of a "t5" (unigram) vocabulary, as llama.cpp's converter writes
// them from the SentencePiece model.
const (
	keyCharsmap    = "tokenizer.ggml.precompiled_charsmap"
	keyRemoveSpace = "tokenizer.ggml.remove_extra_whitespaces"
)

// fromMetaUGM builds a unigram tokenizer from GGUF metadata: the pieces,
// their scores and types (llama_token_type numbers are SentencePiece's
// piece types), the charsmap as an array of bytes, and the normalizer
// switches add_space_prefix and remove_extra_whitespaces (both default to
// true, SentencePiece's defaults). Encoding follows sentencepiece, with no
// byte fallback (llama.cpp's UGM tokenizer has none).
func fromMetaUGM(m *gguf.Metadata, pre string) (*Tokenizer, error) {
	toks, err := m.Strings(keyTokens)
	if err != nil {
		return nil, loadErr(keyTokens, ErrMissing, "%v", err)
	}
	n := len(toks)
	if n == 0 || n > maxSPPieces {
		return nil, loadErr(keyTokens, ErrInvalid, "%d tokens (want 1..%d)", n, maxSPPieces)
	}
	scores, err := m.Float32s(keyScores)
	if err != nil {
		return nil, loadErr(keyScores, ErrMissing, "%v", err)
	}
	if len(scores) < n {
		return nil, loadErr(keyScores, ErrInvalid, "%d scores for %d tokens", len(scores), n)
	}
	tt, err := m.Ints(keyTypes)
	if err != nil {
		return nil, loadErr(keyTypes, ErrMissing, "%v", err)
	}
	if len(tt) < n {
		return nil, loadErr(keyTypes, ErrInvalid, "%d token types for %d tokens", len(tt), n)
	}
	types := make([]spPieceType, n)
	for i := range types {
		if tt[i] < 1 || tt[i] > 6 {
			return nil, loadErr(keyTypes, ErrInvalid, "token %d has type %d (want 1..6)", i, tt[i])
		}
		types[i] = spPieceType(tt[i])
	}
	norm := normalizer{dummyPrefix: true, removeSpace: true, escape: true}
	for _, b := range []struct {
		key string
		p   *bool
	}{{keyAddSpc, &norm.dummyPrefix}, {keyRemoveSpace, &norm.removeSpace}} {
		if m.Has(b.key) {
			if *b.p, err = m.Bool(b.key); err != nil {
				return nil, loadErr(b.key, ErrInvalid, "%v", err)
			}
		}
	}
	if v, ok := m.Lookup(keyCharsmap); ok {
		var blob []byte
		switch a := v.Any().(type) {
		case []uint8:
			blob = a
		case []int8:
			blob = make([]byte, len(a))
			for i, c := range a {
				blob[i] = byte(c)
			}
		default:
			return nil, loadErr(keyCharsmap, ErrInvalid, "want an array of uint8 or int8, have %s", v.TypeName())
		}
		if norm.trie, norm.repl, err = newCharsmap(blob); err != nil {
			return nil, loadErr(keyCharsmap, ErrInvalid, "%v", err)
		}
	}
	ids := ugmIDs{bos: none, eos: 1, pad: 0}
	for _, s := range []struct {
		key string
		p   *int32
	}{{"tokenizer.ggml.bos_token_id", &ids.bos}, {"tokenizer.ggml.eos_token_id", &ids.eos}, {"tokenizer.ggml.padding_token_id", &ids.pad}} {
		if m.Has(s.key) {
			v, err := m.Int(s.key)
			if err != nil {
				return nil, loadErr(s.key, ErrInvalid, "%v", err)
			}
			if v >= 0 && v < int64(n) {
				*s.p = int32(v)
			}
		}
	}
	texts := make([]string, n)
	copy(texts, toks)
	t, err := newUGM(texts, scores[:n:n], types, norm, false, ids)
	if err != nil {
		return nil, err
	}
	t.pre = pre
	for _, b := range []struct {
		key string
		p   *bool
	}{{keyAddBOS, &t.addBOS}, {keyAddEOS, &t.addEOS}} {
		if m.Has(b.key) {
			if *b.p, err = m.Bool(b.key); err != nil {
				return nil, loadErr(b.key, ErrInvalid, "%v", err)
			}
		}
	}
	if t.addBOS && t.bos == none {
		return nil, loadErr(keyAddBOS, ErrInvalid, "true but tokenizer.ggml.bos_token_id is not set")
	}
	if t.addEOS && t.eos == none {
		return nil, loadErr(keyAddEOS, ErrInvalid, "true but tokenizer.ggml.eos_token_id is not set")
	}
	return t, nil
}
