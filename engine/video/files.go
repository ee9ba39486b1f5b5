package video

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/diffusion"
	"github.com/glassbox-ai/glassbox/diffusion/wan"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/textenc/t5"
)

// CheckFiles reads the headers of r's three files, binding nothing heavy,
// and refuses in stage load what the job's load would refuse: a file of
// another family in a slot, a DiT whose text rows are not as wide as the
// encoder's, token ids outside the encoder's vocabulary, and a text prompt
// with no SentencePiece model to tokenize it. A server calls it when a
// request names the files, so such a request is answered at once instead
// of failing after its turn in the queue. r's settings are Check's.
func (r *Request) CheckFiles() error {
	open := func(slot, path string, want checkpoint.Family) (*checkpoint.File, error) {
		f, err := checkpoint.Open(path)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		if d := checkpoint.Detect(f); d.Family != want {
			f.Close()
			return nil, pipeline.Errorf(pipeline.StageLoad, "give the Wan 2.1 DiT, its VAE and the umT5 text encoder, each in its own place",
				"the %s %s is %s, not a %s file", slot, filepath.Base(path), d, want)
		}
		return f, nil
	}
	tf, err := open("text encoder", r.T5, checkpoint.TextEncoder)
	if err != nil {
		return err
	}
	defer tf.Close()
	enc, err := t5.New(tf)
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	ec := enc.Config()
	for _, ids := range []struct {
		name string
		ids  []int32
	}{{"prompt ids", r.PromptIDs}, {"negative prompt ids", r.NegativeIDs}} {
		for i, id := range ids.ids {
			if id < 0 || int(id) >= ec.VocabSize {
				return pipeline.Errorf(pipeline.StageLoad, "",
					"%s: token %d is id %d, outside the vocabulary of %s (0..%d)", ids.name, i, id, filepath.Base(r.T5), ec.VocabSize-1)
			}
		}
	}
	if len(r.PromptIDs) == 0 || (len(r.NegativeIDs) == 0 && diffusion.NeedsUncond(r.CFGScale)) {
		if err := hasSentencePiece(r.Spiece, tf); err != nil {
			return pipeline.Wrap(pipeline.StageLoad, err, "")
		}
	}
	df, err := open("DiT", r.DiT, checkpoint.Wan)
	if err != nil {
		return err
	}
	defer df.Close()
	dc, err := wan.Inspect(df, r.Heads)
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	if dc.TextDim != ec.Dim {
		return pipeline.Errorf(pipeline.StageLoad, "give the text encoder the DiT was trained with (umT5-XXL for Wan 2.1)",
			"the DiT %s reads %d-wide text rows, the text encoder %s makes %d-wide ones", filepath.Base(r.DiT), dc.TextDim, filepath.Base(r.T5), ec.Dim)
	}
	vf, err := open("VAE", r.VAE, checkpoint.WanVAE)
	if err != nil {
		return err
	}
	return vf.Close()
}

// hasSentencePiece says whether sentencePiece would find a model to read
// (the --spiece file, or the umT5 file's spiece_model tensor of bytes),
// without parsing it.
func hasSentencePiece(path string, f *checkpoint.File) error {
	if path != "" {
		_, err := os.Stat(path)
		return err
	}
	t, ok := f.Tensor(spieceTensor)
	if !ok {
		return &checkpoint.Error{Path: f.Path(), Tensor: spieceTensor,
			Err: fmt.Errorf("%w: the umT5 file has no SentencePiece model to tokenize the prompts with: give them as token ids (a job's prompt_ids and negative_prompt_ids; glassbox video's --prompt-ids and --negative-prompt-ids) or give glassbox video the model's spiece.model (--spiece)", checkpoint.ErrMissing)}
	}
	if t.DType.TypeSize() != 1 || len(t.Shape) != 1 {
		return &checkpoint.Error{Path: f.Path(), Tensor: spieceTensor, Err: fmt.Errorf("is %s %v, want the model's bytes (one dimension of 1-byte elements)", t.DType, t.Shape)}
	}
	return nil
}
