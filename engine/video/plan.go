package video

import (
	"fmt"
	"strings"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/diffusion/wan"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/textenc/t5"
	"github.com/glassbox-ai/glassbox/vae"
)

// Plan is the memory a video job needs, per component and per stage.
type Plan struct {
	Frames, Width, Height int
	Tokens                int // the DiT's sequence length

	T5Bytes  int64 `json:"t5_bytes"`
	DiTBytes int64 `json:"dit_bytes"`
	VAEBytes int64 `json:"vae_bytes"` // the decoder, widened to float32

	T5Activations  int64 `json:"t5_activation_bytes"`  // one Encode of the longest prompt (512 tokens)
	TextBytes      int64 `json:"text_bytes"`           // both prompts' cross-attention keys and values
	DiTActivations int64 `json:"dit_activation_bytes"` // one Forward at frames × height × width
	SamplerBytes   int64 `json:"sampler_bytes"`        // the sampler's and CFG's latents
	DecodeBytes    int64 `json:"decode_bytes"`         // the streaming VAE decode (flat in the frames)

	EncodePeak   int64 `json:"encode_peak_bytes"`   // umT5 running (the DiT mapped, not yet read), the VAE bound
	GeneratePeak int64 `json:"generate_peak_bytes"` // umT5 dropped, the DiT running
	DecodePeak   int64 `json:"decode_peak_bytes"`   // the DiT dropped, the VAE decoding
	Total        int64 `json:"total_bytes"`         // the largest of the three
	Budget       int64 `json:"budget_bytes"`

	// Fits is the largest valid frame count that fits the budget at this
	// size (0: none), set when the job does not fit.
	Fits int `json:"fits_frames,omitempty"`
}

// samplerLatents is the number of latent-sized buffers the flow sampler
// (x, its previous x0s and corrector state) and FlowGuidance (two
// predictions and the guided one) keep.
const samplerLatents = 10

// PlanJob measures the job's components from their files (the umT5 and
// DiT shapes from binding them, which aliases their matrices; the VAE
// from its tensors' element counts) and its activations at r's size.
func PlanJob(r *Request, l wan.Latent, dev *plan.Device) (*Plan, error) {
	p := &Plan{Frames: r.Frames, Width: r.Width, Height: r.Height, Tokens: l.Tokens(), Budget: r.Budget}
	if p.Budget == 0 && dev != nil {
		p.Budget = dev.RAMAvailable
	}
	open := func(path string) (*checkpoint.File, error) {
		f, err := checkpoint.Open(path)
		if err != nil {
			return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
		}
		return f, nil
	}
	f, err := open(r.T5)
	if err != nil {
		return nil, err
	}
	enc, err := t5.New(f)
	if err == nil {
		p.T5Bytes = enc.WeightBytes()
		p.T5Activations = enc.Config().ActivationBytes(wan.TextLen)
	}
	f.Close()
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	if f, err = open(r.DiT); err != nil {
		return nil, err
	}
	dit, err := wan.New(f, r.Heads)
	var cfg wan.Config
	if err == nil {
		cfg = dit.Config()
		p.DiTBytes = dit.WeightBytes()
	}
	f.Close()
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	if p.VAEBytes, err = vaeDecoderBytes(r.VAE); err != nil {
		return nil, err
	}
	p.TextBytes = 2 * cfg.TextBytes(wan.TextLen)
	p.fill(cfg, l)
	return p, nil
}

// vaeDecoderBytes is the memory of the VAE's decoder once bound: its
// tensors (and the post-quantisation conv2) widened to float32; the file
// also holds the encoder, which the job does not bind.
func vaeDecoderBytes(path string) (int64, error) {
	f, err := checkpoint.Open(path)
	if err != nil {
		return 0, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer f.Close()
	var n int64
	for _, name := range f.Names() {
		dec := strings.Contains(name, "decoder.") || (strings.Contains(name, "conv2.") && !strings.Contains(name, "encoder."))
		if t, ok := f.Tensor(name); ok && dec {
			n += 4 * int64(t.Numel())
		}
	}
	return n, nil
}

// PlanDecode is the plan of decoding a saved latent again: the VAE's
// decoder, the latent and the streaming decode.
func PlanDecode(r *Request, l wan.Latent, dev *plan.Device) (*Plan, error) {
	p := &Plan{Frames: r.Frames, Width: r.Width, Height: r.Height, Tokens: l.Tokens(), Budget: r.Budget}
	if p.Budget == 0 && dev != nil {
		p.Budget = dev.RAMAvailable
	}
	var err error
	if p.VAEBytes, err = vaeDecoderBytes(r.VAE); err != nil {
		return nil, err
	}
	p.DecodeBytes = vae.WanDecodeBytes(l.Frames, l.Height, l.Width)
	p.SamplerBytes = 4 * int64(l.Len())
	p.DecodePeak = p.VAEBytes + p.DecodeBytes + p.SamplerBytes
	p.Total = p.DecodePeak
	return p, nil
}

// fill computes the size-dependent figures and the peaks.
func (p *Plan) fill(cfg wan.Config, l wan.Latent) {
	p.DiTActivations = cfg.ActivationBytes(l.Frames, l.Height, l.Width)
	p.SamplerBytes = samplerLatents * 4 * int64(l.Len())
	p.DecodeBytes = vae.WanDecodeBytes(l.Frames, l.Height, l.Width)
	// The DiT's matrices alias its file's mapping and are first read in
	// generate, after umT5's file is closed: the two are never resident
	// together.
	p.EncodePeak = p.T5Bytes + p.VAEBytes + p.T5Activations + 2*4*int64(wan.TextLen*cfg.TextDim)
	p.GeneratePeak = p.DiTBytes + p.VAEBytes + p.TextBytes + p.SamplerBytes + p.DiTActivations
	// The DiT's file is closed before the decode; the latent stays.
	p.DecodePeak = p.VAEBytes + 4*int64(l.Len()) + p.DecodeBytes
	p.Total = max(p.EncodePeak, p.GeneratePeak, p.DecodePeak)
	if p.Budget > 0 && p.Total > p.Budget {
		p.Fits = 0
		for f := p.Frames - 4; f >= 1; f -= 4 {
			ll, err := wan.LatentOf(f, p.Width, p.Height)
			if err != nil {
				break
			}
			q := *p
			q.Frames, q.Budget = f, 0
			q.fill(cfg, ll)
			if q.Total <= p.Budget {
				p.Fits = f
				break
			}
		}
	}
}

// Admit refuses a plan over its budget, with the numbers.
func (p *Plan) Admit() error {
	if p.Budget <= 0 || p.Total <= p.Budget {
		return nil
	}
	hint := fmt.Sprintf("no frame count fits at %d×%d: try a smaller size", p.Width, p.Height)
	if p.Fits > 0 {
		hint = fmt.Sprintf("at %d×%d, %d frames fit (--frames %d), or a smaller size", p.Width, p.Height, p.Fits, p.Fits)
	}
	return pipeline.Errorf(pipeline.StagePlan, hint, "%d frames of %d×%d need %s, the budget is %s: %s",
		p.Frames, p.Width, p.Height, plan.FormatBytes(p.Total), plan.FormatBytes(p.Budget), p.String())
}

// String is the plan in one line.
func (p *Plan) String() string {
	b := plan.FormatBytes
	var s strings.Builder
	fmt.Fprintf(&s, "weights umT5 %s, DiT %s, VAE %s; %d tokens: DiT activations %s, text %s, sampler %s, decode %s; peak encode %s, generate %s, decode %s",
		b(p.T5Bytes), b(p.DiTBytes), b(p.VAEBytes), p.Tokens, b(p.DiTActivations), b(p.TextBytes), b(p.SamplerBytes), b(p.DecodeBytes),
		b(p.EncodePeak), b(p.GeneratePeak), b(p.DecodePeak))
	return s.String()
}
