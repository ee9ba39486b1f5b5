package video

import (
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/diffusion/wan"
)

// wan13B is the Wan 2.1 T2V-1.3B shape (README §2 of the golden set).
var wan13B = wan.Config{InDim: 16, OutDim: 16, Dim: 1536, FFNDim: 8960, FreqDim: 256, TextDim: 4096, NumHeads: 12, NumLayers: 30}

// TestPlanFrames: with the 1.3B shape the DiT's activations grow with the
// frames while the decode stays flat, and a budget below the job's peak
// is refused with the numbers and the largest frame count that fits.
func TestPlanFrames(t *testing.T) {
	plan := func(frames int, budget int64) *Plan {
		l, err := wan.LatentOf(frames, 480, 272)
		if err != nil {
			t.Fatal(err)
		}
		p := &Plan{Frames: frames, Width: 480, Height: 272, Tokens: l.Tokens(), Budget: budget,
			T5Bytes: 1 << 30, DiTBytes: 2838 << 20, VAEBytes: 280 << 20, TextBytes: 2 * wan13B.TextBytes(wan.TextLen)}
		p.fill(wan13B, l)
		return p
	}
	p17, p81 := plan(17, 0), plan(81, 0)
	t.Logf("17 frames: %s", p17)
	t.Logf("81 frames: %s", p81)
	if p81.DiTActivations <= p17.DiTActivations || p81.Tokens != 21*17*30 {
		t.Errorf("DiT activations %d → %d, tokens %d: want growth and 10710 tokens", p17.DiTActivations, p81.DiTActivations, p81.Tokens)
	}
	if p81.DecodeBytes != p17.DecodeBytes {
		t.Errorf("decode %d at 17 frames, %d at 81: want flat", p17.DecodeBytes, p81.DecodeBytes)
	}
	if p17.Admit() != nil || p17.Total != max(p17.EncodePeak, p17.GeneratePeak, p17.DecodePeak) {
		t.Errorf("unbudgeted plan refused or total %d is not the peak", p17.Total)
	}
	// A budget between the 33- and 81-frame peaks (with umT5-XXL at 11 GiB
	// the encode peak would decide and no frame count would help).
	budget := (plan(33, 0).Total + p81.Total) / 2
	p := plan(81, budget)
	err := p.Admit()
	if err == nil {
		t.Fatalf("81 frames admitted in %d bytes (needs %d)", budget, p.Total)
	}
	if p.Fits < 33 || p.Fits >= 81 || (p.Fits-1)%4 != 0 || plan(p.Fits, 0).Total > budget || plan(p.Fits+4, 0).Total <= budget {
		t.Errorf("fits %d frames in %d bytes: want the largest 4n+1 that fits", p.Fits, budget)
	}
	for _, want := range []string{"81 frames of 480×272", "--frames", "budget"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	t.Log(err)
}
