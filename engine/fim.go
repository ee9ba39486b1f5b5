package engine

import (
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/tokenizer"
)

// FIM is a fill-in-the-middle request, what code-completion tools send:
// the model writes what goes between the text before the cursor (the
// request's Prompt) and Suffix. Code models are trained on it (Bavarian et
// al. 2022, "Efficient Training of Language Models to Fill in the
// Middle", arXiv:2207.14255) with three tokens of their vocabulary:
//
//	[files] [BOS] <FIM_PRE> prefix <FIM_SUF> suffix <FIM_MID>
//
// the reply following <FIM_MID> (the prefix-suffix-middle order, as
// llama.cpp's server writes it). Files are other files the model sees
// first (llama-server's input_extra): with the vocabulary's repository and
// file-separator tokens in the repository-level layout of Qwen2.5-Coder
// (Hui et al. 2024, arXiv:2409.12186) — <REPO>myproject\n, then
// <SEP>name\ntext per file, then <SEP>filename\n for the file being
// written, the names llama.cpp's server uses —, without them each file's
// text after a "--- snippet ---" line.
type FIM struct {
	Suffix string
	Files  []FIMFile
}

// FIMFile is a file of context for a FIM request.
type FIMFile struct {
	Name string // "tmp" when empty, as llama.cpp's server
	Text string
}

// fimSnippet separates context files when the vocabulary has no file
// separator (llama.cpp's server writes the same line).
const fimSnippet = "\n\n--- snippet ---\n\n"

// encodeFIM tokenizes a FIM request (texts without their special tokens'
// meaning: the code is text). A vocabulary without the three FIM tokens
// is an encode-stage error.
func encodeFIM(tok *tokenizer.Tokenizer, prefix string, f *FIM, bos bool) ([]int, error) {
	pre, suf, mid := tok.FIM()
	if pre < 0 || suf < 0 || mid < 0 {
		return nil, pipeline.Errorf(pipeline.StageEncode, "use a code model trained to fill in the middle (Qwen2.5-Coder, CodeLlama, StarCoder2, DeepSeek-Coder, Codestral)",
			"the vocabulary has no fill-in-the-middle tokens (prefix %d, suffix %d, middle %d)", pre, suf, mid)
	}
	var ids []int
	text := func(s string) error {
		t, err := tok.Encode(s, false, false)
		if err != nil {
			return pipeline.Wrap(pipeline.StageEncode, err, "")
		}
		ids = append(ids, t...)
		return nil
	}
	_, rep, sep := tok.FIMContext()
	if rep >= 0 && len(f.Files) > 0 {
		ids = append(ids, rep)
		if err := text("myproject\n"); err != nil {
			return nil, err
		}
	}
	for _, file := range f.Files {
		name := file.Name
		if name == "" {
			name = "tmp"
		}
		var err error
		if sep >= 0 {
			ids = append(ids, sep)
			err = text(name + "\n")
		} else {
			err = text(fimSnippet)
		}
		if err == nil {
			err = text(file.Text)
		}
		if err != nil {
			return nil, err
		}
	}
	if sep >= 0 && len(f.Files) > 0 {
		ids = append(ids, sep)
		if err := text("filename\n"); err != nil {
			return nil, err
		}
	}
	if bos && tok.AddBOS() && tok.BOS() >= 0 {
		ids = append(ids, tok.BOS())
	}
	ids = append(ids, pre)
	if err := text(prefix); err != nil {
		return nil, err
	}
	ids = append(ids, suf)
	if err := text(f.Suffix); err != nil {
		return nil, err
	}
	return append(ids, mid), nil
}
