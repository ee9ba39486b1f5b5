package tokenizer

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/glassbox-ai/glassbox/gguf"
)

// attr is a token's attribute set (llama_token_attr).
type attr uint16

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
	attrLstrip
	attrRstrip
)

// GGUF tokenizer.ggml.token_type values (llama_token_type).
const (
	typeNormal      = 1
	typeUnknown     = 2
	typeControl     = 3
	typeUserDefined = 4
	typeUnused      = 5
	typeByte        = 6
)

// kind is the tokenizer model.
type kind uint8

const (
	kindSPM kind = iota + 1 // "llama"
	kindBPE                 // "gpt2"
	kindWPM                 // "bert"
	kindUGM                 // "t5": SentencePiece unigram
)

// none marks an absent special token.
const none = -1

// Metadata keys.
const (
	keyModel   = "tokenizer.ggml.model"
	keyPre     = "tokenizer.ggml.pre"
	keyTokens  = "tokenizer.ggml.tokens"
	keyScores  = "tokenizer.ggml.scores"
	keyTypes   = "tokenizer.ggml.token_type"
	keyMerges  = "tokenizer.ggml.merges"
	keyAddBOS  = "tokenizer.ggml.add_bos_token"
	keyAddEOS  = "tokenizer.ggml.add_eos_token"
	keyAddSep  = "tokenizer.ggml.add_sep_token"
	keyAddSpc  = "tokenizer.ggml.add_space_prefix"
	keyLower   = "tokenizer.ggml.normalizer.lowercase"
	keyStripAc = "tokenizer.ggml.normalizer.strip_accents"
)

// Tokenizer turns text into token ids and back. It is immutable once built
// and safe for concurrent use.
type Tokenizer struct {
	kind  kind
	model string
	pre   string

	tokens []string         // id -> text as stored in the file
	scores []float32        // id -> SPM merge score
	attrs  []attr           // id -> attributes
	ids    map[string]int32 // text -> id
	pieces []string         // id -> bytes it decodes to (special tokens as their text)
	eog    []bool           // id -> ends generation

	bos, eos, eot, eom, unk, sep, pad int
	fim                               [3]int // FIM pad, repo and file-separator tokens (end generation)
	fimPSM                            [3]int // FIM prefix, suffix and middle tokens

	addBOS, addEOS, addSep bool
	addSpacePrefix         bool
	ignoreMerges           bool

	specialAll  *trie // control, user-defined and unknown tokens (parse special)
	specialUser *trie // user-defined tokens only (always cut out)
	specialPrio []int // id -> priority in llama.cpp's partition order (lower first)

	spmByte [256]int32      // byte -> <0xNN> token (or the byte itself), -1 if none
	spmGlue map[string]bool // characters some token has right before a "▁"

	bpe *bpeModel
	pt  *pretokenizer
	ugm *ugmModel

	wpmMaxLen    int
	lowercase    bool
	stripAccents bool

	scratch sync.Pool // *bpeState or *spmState: per-call buffers and word caches
}

// FromGGUF builds the tokenizer described by f's tokenizer.ggml.* metadata,
// following llama.cpp's llama_vocab::load. The Tokenizer keeps no reference
// to f: the file may be closed afterwards.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	if f == nil {
		return nil, loadErr("", ErrMissing, "no GGUF file")
	}
	return fromMeta(&f.Meta, f)
}

func fromMeta(m *gguf.Metadata, f *gguf.File) (*Tokenizer, error) {
	t := &Tokenizer{eot: none, eom: none}
	var err error
	if t.model, err = m.String(keyModel); err != nil {
		return nil, loadErr(keyModel, ErrMissing, "%v", err)
	}
	if m.Has(keyPre) {
		if t.pre, err = m.String(keyPre); err != nil {
			return nil, loadErr(keyPre, ErrInvalid, "%v", err)
		}
	}
	switch t.model {
	case "llama":
		t.kind = kindSPM
		t.bos, t.eos, t.unk, t.sep, t.pad = 1, 2, 0, none, none
		t.addSpacePrefix, t.addBOS = true, true
	case "bert":
		t.kind = kindWPM
		t.bos, t.eos, t.unk, t.sep, t.pad = 101, none, 100, 102, 0
		t.addBOS, t.addSep = true, true
		t.lowercase = true
	case "t5":
		return fromMetaUGM(m, t.pre)
	case "gpt2":
		t.kind = kindBPE
		t.bos, t.eos, t.unk, t.sep, t.pad = 11, 11, none, none, none
	default:
		return nil, loadErr(keyModel, ErrUnsupported, "model %q (want llama, gpt2, bert or t5)", t.model)
	}
	if err := t.loadTokens(m); err != nil {
		return nil, err
	}
	if t.kind == kindBPE {
		if err := t.configureBPE(m); err != nil {
			return nil, err
		}
	}
	if err := t.loadFlags(m); err != nil {
		return nil, err
	}
	if err := t.loadSpecialIDs(m); err != nil {
		return nil, err
	}
	t.markByName(m)
	t.buildEOG()
	t.buildSpecial()
	t.buildPieces()
	if t.kind == kindSPM {
		t.spmGlue = map[string]bool{}
		for _, s := range t.tokens {
			for k := 1; k < len(s); k++ {
				if strings.HasPrefix(s[k:], "\u2581") {
					_, n := utf8.DecodeLastRuneInString(s[:k])
					t.spmGlue[s[k-n:k]] = true
				}
			}
		}
		for b := range t.spmByte {
			t.spmByte[b] = t.lookup(fmt.Sprintf("<0x%02X>", b))
			if t.spmByte[b] < 0 {
				t.spmByte[b] = t.lookup(string([]byte{byte(b)}))
			}
		}
	}
	if t.kind == kindWPM {
		for _, s := range t.tokens {
			t.wpmMaxLen = max(t.wpmMaxLen, len(s))
		}
	}
	return t, nil
}

func (t *Tokenizer) lookup(s string) int32 {
	if id, ok := t.ids[s]; ok {
		return id
	}
	return none
}

func (t *Tokenizer) loadTokens(m *gguf.Metadata) error {
	toks, err := m.Strings(keyTokens)
	if err != nil {
		return loadErr(keyTokens, ErrMissing, "%v", err)
	}
	n := len(toks)
	if n == 0 || n > 1<<30 {
		return loadErr(keyTokens, ErrInvalid, "%d tokens", n)
	}
	t.tokens = make([]string, n)
	t.ids = make(map[string]int32, n)
	for i, s := range toks {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if j, dup := t.ids[s]; dup {
			return loadErr(keyTokens, ErrInvalid, "duplicate token %q has ids %d and %d", s, j, i)
		}
		t.ids[s] = int32(i)
		t.tokens[i] = s
	}
	t.scores = make([]float32, n)
	if v, ok := m.Lookup(keyScores); ok {
		if sc, err := m.Float32s(keyScores); err == nil {
			if len(sc) < n {
				return loadErr(keyScores, ErrInvalid, "%d scores for %d tokens", len(sc), n)
			}
			copy(t.scores, sc)
		} else if is, err := m.Ints(keyScores); err == nil && v.Elem == gguf.TypeInt32 {
			if len(is) < n {
				return loadErr(keyScores, ErrInvalid, "%d scores for %d tokens", len(is), n)
			}
			for i := range t.scores {
				t.scores[i] = float32(is[i])
			}
		} else {
			return loadErr(keyScores, ErrInvalid, "want array of float32 or int32, have %s", v.TypeName())
		}
	}
	t.attrs = make([]attr, n)
	for i := range t.attrs {
		t.attrs[i] = attrNormal
	}
	if m.Has(keyTypes) {
		types, err := m.Ints(keyTypes)
		if err != nil {
			return loadErr(keyTypes, ErrInvalid, "%v", err)
		}
		if len(types) < n {
			return loadErr(keyTypes, ErrInvalid, "%d token types for %d tokens", len(types), n)
		}
		for i := range t.attrs {
			t.attrs[i] = attrOfType(types[i])
		}
	}
	return nil
}

func attrOfType(ty int64) attr {
	switch ty {
	case typeNormal:
		return attrNormal
	case typeUnknown:
		return attrUnknown
	case typeControl:
		return attrControl
	case typeUserDefined:
		return attrUserDefined
	case typeUnused:
		return attrUnused
	case typeByte:
		return attrByte
	}
	return 0 // undefined
}

// loadFlags reads the add_* switches and normalizer options; the defaults
// per model were set by fromMeta.
func (t *Tokenizer) loadFlags(m *gguf.Metadata) error {
	for _, b := range []struct {
		key string
		p   *bool
	}{{keyAddSpc, &t.addSpacePrefix}, {keyAddBOS, &t.addBOS}, {keyAddEOS, &t.addEOS}, {keyAddSep, &t.addSep}, {keyLower, &t.lowercase}} {
		if !m.Has(b.key) {
			continue
		}
		v, err := m.Bool(b.key)
		if err != nil {
			return loadErr(b.key, ErrInvalid, "%v", err)
		}
		*b.p = v
	}
	t.stripAccents = t.lowercase
	if m.Has(keyStripAc) {
		v, err := m.Bool(keyStripAc)
		if err != nil {
			return loadErr(keyStripAc, ErrInvalid, "%v", err)
		}
		t.stripAccents = v
	}
	return nil
}

// loadSpecialIDs reads the special token ids. Like llama.cpp, an id outside
// the vocabulary (stories260K writes 0xFFFFFFFF for "none") keeps the
// model's default, and a default outside the vocabulary is disabled.
func (t *Tokenizer) loadSpecialIDs(m *gguf.Metadata) error {
	var fimPad, fimRep, fimSep, cls = none, none, none, none
	var fimPre, fimSuf, fimMid = none, none, none
	for _, s := range []struct {
		key string
		p   *int
	}{
		{"bos_token_id", &t.bos}, {"eos_token_id", &t.eos}, {"eot_token_id", &t.eot}, {"eom_token_id", &t.eom},
		{"unknown_token_id", &t.unk}, {"seperator_token_id", &t.sep}, {"padding_token_id", &t.pad},
		{"cls_token_id", &cls}, {"fim_pad_token_id", &fimPad}, {"fim_rep_token_id", &fimRep}, {"fim_sep_token_id", &fimSep},
		{"fim_pre_token_id", &fimPre}, {"fim_suf_token_id", &fimSuf}, {"fim_mid_token_id", &fimMid},
		{"prefix_token_id", &fimPre}, {"suffix_token_id", &fimSuf}, {"middle_token_id", &fimMid},
	} {
		if *s.p >= len(t.tokens) {
			*s.p = none
		}
		key := "tokenizer.ggml." + s.key
		if !m.Has(key) {
			continue
		}
		v, err := m.Int(key)
		if err != nil {
			return loadErr(key, ErrInvalid, "%v", err)
		}
		if v < 0 || v >= int64(len(t.tokens)) {
			slog.Debug("tokenizer: special token id out of range, using default", "key", key, "id", v, "default", *s.p)
			continue
		}
		*s.p = int(v)
	}
	if t.kind == kindWPM && cls != none && !m.Has("tokenizer.ggml.bos_token_id") {
		t.bos = cls
	}
	t.fim = [3]int{fimPad, fimRep, fimSep}
	t.fimPSM = [3]int{fimPre, fimSuf, fimMid}
	for _, c := range []struct {
		add      bool
		id       int
		key, idk string
	}{{t.addBOS, t.bos, keyAddBOS, "bos_token_id"}, {t.addEOS, t.eos, keyAddEOS, "eos_token_id"},
		{t.addSep && t.kind == kindWPM, t.sep, keyAddSep, "seperator_token_id"}} {
		if c.add && c.id == none {
			return loadErr(c.key, ErrInvalid, "true but tokenizer.ggml.%s is not set", c.idk)
		}
	}
	return nil
}

// markByName applies llama.cpp's recognition of special tokens by their
// text: EOT/EOM/FIM tokens that the converter did not mark, "unused"
// control tokens, and the Phi-3 strip attributes.
func (t *Tokenizer) markByName(m *gguf.Metadata) {
	if t.eot == none {
		t.eot = t.firstNamed(eotNames)
	}
	if t.eom == none {
		t.eom = t.firstNamed([]string{"<|eom_id|>"})
	}
	// FIM prefix/suffix/middle tokens found by name are marked as control.
	for i, names := range [][]string{
		{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"},
		{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"},
		{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"},
	} {
		if t.fimPSM[i] == none {
			t.fimPSM[i] = t.firstNamed(names)
		}
	}
	for i, names := range [][]string{
		{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"},
		{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"},
		{"<|file_sep|>"},
	} {
		if t.fim[i] == none {
			t.fim[i] = t.firstNamed(names)
		}
	}
	for i, a := range t.attrs {
		if a&attrControl != 0 && strings.Contains(t.tokens[i], "unused") {
			t.attrs[i] |= attrUnused
		}
	}
	for _, s := range []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"} {
		if id := t.lookup(s); id >= 0 {
			t.attrs[id] = attrUserDefined
		}
	}
	name, _ := m.String("general.name")
	name = strings.ToLower(name)
	if strings.Contains(name, "phi-3") || strings.Contains(name, "phi3") {
		for i, a := range t.attrs {
			if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
				t.attrs[i] |= attrRstrip
			}
		}
		if id := t.lookup("</s>"); id >= 0 {
			t.attrs[id] |= attrRstrip
		}
		for _, s := range []string{"<unk>", "<s>", "<|endoftext|>"} {
			if id := t.lookup(s); id >= 0 {
				t.attrs[id] &^= attrRstrip
			}
		}
	}
}

var eotNames = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
	"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}

// eogNames are the token texts llama.cpp treats as end of generation.
var eogNames = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
	"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
	"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}

// firstNamed returns the lowest id whose text is one of names, marking it
// as a control token (llama.cpp overrides the type the same way).
func (t *Tokenizer) firstNamed(names []string) int {
	best := none
	for _, s := range names {
		if id := int(t.lookup(s)); id >= 0 && (best == none || id < best) {
			best = id
		}
	}
	if best != none {
		t.attrs[best] |= attrControl
	}
	return best
}

func (t *Tokenizer) buildEOG() {
	t.eog = make([]bool, len(t.tokens))
	for _, id := range t.fim[:] {
		if id != none {
			t.eog[id] = true
		}
	}
	for _, s := range eogNames {
		if id := t.lookup(s); id >= 0 {
			t.eog[id] = true
			t.attrs[id] |= attrControl
		}
	}
	for _, id := range []int{t.eos, t.eot, t.eom} {
		if id != none {
			t.eog[id] = true
		}
	}
	// o200k_harmony / solar-open: "<|end|>" does not end generation there.
	has := func(s string) bool { id := t.lookup(s); return id >= 0 && t.eog[id] }
	if end := t.lookup("<|end|>"); end >= 0 && t.eog[end] &&
		((has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"))) {
		t.eog[end] = false
		t.attrs[end] = attrUserDefined
	}
	if s := t.lookup("</s>"); s >= 0 && t.eog[s] && has("<|tool_response>") {
		t.eog[s] = false
		t.attrs[s] = attrNormal
	}
}

// buildSpecial collects the tokens cut out of text before the model runs,
// in llama.cpp's order: longest text first (ties by id, for determinism).
func (t *Tokenizer) buildSpecial() {
	var ids []int
	for i, a := range t.attrs {
		if a&(attrControl|attrUserDefined|attrUnknown) != 0 {
			ids = append(ids, i)
		}
	}
	sort.SliceStable(ids, func(a, b int) bool { return len(t.tokens[ids[a]]) > len(t.tokens[ids[b]]) })
	t.specialPrio = make([]int, len(t.tokens))
	t.specialAll, t.specialUser = newTrie(), newTrie()
	for p, id := range ids {
		t.specialPrio[id] = p
		t.specialAll.insert(t.tokens[id], int32(id))
		if t.attrs[id]&(attrControl|attrUnknown) == 0 {
			t.specialUser.insert(t.tokens[id], int32(id))
		}
	}
}
