package t5

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/checkpoint"
	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/tensor"
)

// hfName maps Wan's names to the Hugging Face ones of ComfyUI's files.
func hfName(name string) string {
	if name == "token_embedding.weight" {
		return "shared.weight"
	}
	if name == "norm.weight" {
		return "encoder.final_layer_norm.weight"
	}
	var l int
	var rest string
	if _, err := fmt.Sscanf(name, "blocks.%d.%s", &l, &rest); err != nil {
		return name
	}
	m := map[string]string{
		"norm1.weight": "layer.0.layer_norm.weight", "attn.q.weight": "layer.0.SelfAttention.q.weight",
		"attn.k.weight": "layer.0.SelfAttention.k.weight", "attn.v.weight": "layer.0.SelfAttention.v.weight",
		"attn.o.weight":                  "layer.0.SelfAttention.o.weight",
		"pos_embedding.embedding.weight": "layer.0.SelfAttention.relative_attention_bias.weight",
		"norm2.weight":                   "layer.1.layer_norm.weight", "ffn.gate.0.weight": "layer.1.DenseReluDense.wi_0.weight",
		"ffn.fc1.weight": "layer.1.DenseReluDense.wi_1.weight", "ffn.fc2.weight": "layer.1.DenseReluDense.wo.weight",
	}
	return fmt.Sprintf("encoder.block.%d.%s", l, m[rest])
}

// renamed returns src's tensors under new names, dropping those rename
// maps to "".
func renamed(src checkpoint.Source, rename func(string) string) *checkpoint.Map {
	m := &checkpoint.Map{Label: src.Path() + " (renamed)", Tensors: map[string]*checkpoint.Tensor{}}
	for _, n := range src.Names() {
		t, _ := src.Tensor(n)
		if nn := rename(n); nn != "" {
			c := *t
			c.Name = nn
			m.Tensors[nn] = &c
		}
	}
	return m
}

// TestHFNames: the same weights under ComfyUI's Hugging Face names give
// the same bits.
func TestHFNames(t *testing.T) {
	f := tinyFile(t, tensor.F32)
	wan, err := New(f)
	if err != nil {
		t.Fatal(err)
	}
	hf, err := New(renamed(f, hfName))
	if err != nil {
		t.Fatal(err)
	}
	if wan.Names() != "wan" || hf.Names() != "hf" || wan.Config() != hf.Config() {
		t.Fatalf("names %s/%s, configs %+v / %+v", wan.Names(), hf.Names(), wan.Config(), hf.Config())
	}
	p := compute.NewPool(1)
	defer p.Close()
	ids := []int32{17, 201, 33, 1}
	a, _ := wan.Encode(context.Background(), p, ids)
	b, _ := hf.Encode(context.Background(), p, ids)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatal("outputs differ")
	}
	// T5 v1.1 layout: only block 0 has a relative bias, the others share it.
	shared, err := New(renamed(f, func(n string) string {
		if strings.HasPrefix(n, "blocks.1.pos_embedding") {
			return ""
		}
		return hfName(n)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if c := shared.Config(); !c.SharedPos || c.NumLayers != 2 {
		t.Fatalf("shared config %+v", c)
	}
	s, _ := shared.Encode(context.Background(), p, ids)
	if _, rel, _ := compare(s, a); rel < 1e-3 {
		t.Fatalf("sharing block 0's bias changed the output by only %.3g", rel)
	}
}

// TestF16: the F16 file binds in its type and encodes close to the F32 one
// (its weights are the F32 values rounded to binary16).
func TestF16(t *testing.T) {
	e16, err := New(tinyFile(t, tensor.F16))
	if err != nil {
		t.Fatal(err)
	}
	e32 := tinyEncoder(t)
	if e16.WeightBytes() >= e32.WeightBytes() {
		t.Fatalf("F16 weights %d bytes, F32 %d", e16.WeightBytes(), e32.WeightBytes())
	}
	p := compute.NewPool(2)
	defer p.Close()
	ids := []int32{9, 9, 44, 120, 201, 1}
	a, _ := e16.Encode(context.Background(), p, ids)
	b, _ := e32.Encode(context.Background(), p, ids)
	if _, rel, _ := compare(a, b); rel > 5e-3 || rel == 0 {
		t.Fatalf("F16 vs F32: rel L2 %.3g", rel)
	}
}

// TestErrors: bad ids and bad files are errors naming the cause.
func TestErrors(t *testing.T) {
	e := tinyEncoder(t)
	p := compute.NewPool(1)
	defer p.Close()
	for _, c := range []struct {
		ids    []int32
		substr string
	}{
		{nil, "0 token ids (want 1..512)"},
		{make([]int32, 513), "513 token ids (want 1..512)"},
		{[]int32{5, 256}, "token 1 is id 256, outside the vocabulary (0..255)"},
		{[]int32{-1}, "token 0 is id -1"},
	} {
		_, err := e.Encode(context.Background(), p, c.ids)
		var te *Error
		if !errors.As(err, &te) || te.Stage() != "encode" || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("ids %v: %v, want %q", c.ids, err, c.substr)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.Encode(ctx, p, []int32{1}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}

	f := tinyFile(t, tensor.F32)
	for _, c := range []struct {
		name   string
		rename func(string) string
		is     error
		substr string
	}{
		{"not T5", func(n string) string { return "x." + n }, checkpoint.ErrMissing, "neither token_embedding.weight nor shared.weight"},
		{"missing", func(n string) string {
			if n == "blocks.1.ffn.fc2.weight" {
				return ""
			}
			return n
		}, checkpoint.ErrMissing, "blocks.1.ffn.fc2.weight"},
	} {
		_, err := New(renamed(f, c.rename))
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.substr) {
			t.Errorf("%s: %v, want %v with %q", c.name, err, c.is, c.substr)
		}
	}
	// A wrong shape: block 1's fc1 swapped for its fc2.
	m := renamed(f, func(n string) string { return n })
	m.Tensors["blocks.1.ffn.fc1.weight"], m.Tensors["blocks.1.ffn.fc2.weight"] = m.Tensors["blocks.1.ffn.fc2.weight"], m.Tensors["blocks.1.ffn.fc1.weight"]
	if _, err := New(m); !errors.Is(err, checkpoint.ErrShape) || !strings.Contains(err.Error(), "blocks.1.ffn.fc1.weight") {
		t.Errorf("swapped: %v", err)
	}
}

// TestCleanPrompt: Wan's cleaning (without ftfy) as Python computes it
// (testdata/README.md).
func TestCleanPrompt(t *testing.T) {
	b, err := os.ReadFile("testdata/clean.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct{ In, Out string }
	if err := json.Unmarshal(b, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != 400 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		if got := CleanPrompt(c.In); got != c.Out {
			t.Errorf("CleanPrompt(%q) = %q, want %q", c.In, got, c.Out)
		}
	}
	if NegativePrompt("") != DefaultNegativePrompt || NegativePrompt("x") != "x" || !strings.HasPrefix(DefaultNegativePrompt, "色调艳丽，过曝") {
		t.Error("negative prompt")
	}
}

// TestPromptIDs: truncation keeps 511 tokens and EOS.
func TestPromptIDs(t *testing.T) {
	if got := PromptIDs([]int{5, 6}, 1); fmt.Sprint(got) != "[5 6 1]" {
		t.Errorf("short: %v", got)
	}
	long := make([]int, 600)
	for i := range long {
		long[i] = 7
	}
	got := PromptIDs(long, 1)
	if len(got) != MaxTokens || got[510] != 7 || got[511] != 1 {
		t.Errorf("long: %d ids ending %v", len(got), got[509:])
	}
	if got := PromptIDs(nil, 1); fmt.Sprint(got) != "[1]" {
		t.Errorf("empty: %v", got)
	}
}

// TestActivationBytes: one Encode allocates about what the plan counts.
func TestActivationBytes(t *testing.T) {
	e := tinyEncoder(t)
	p := compute.NewPool(1)
	defer p.Close()
	ids := make([]int32, 100)
	e.Encode(context.Background(), p, ids) // warm compute's pools
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := e.Encode(context.Background(), p, ids); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	got, want := int64(after.TotalAlloc-before.TotalAlloc), e.Config().ActivationBytes(len(ids))
	t.Logf("allocated %d bytes, planned %d", got, want)
	if got > want || got < want/2 {
		t.Errorf("allocated %d bytes, planned %d", got, want)
	}
}

// FuzzCleanPrompt: any text cleans without panic to text with no
// whitespace run, none at the ends, and cleaning twice changes nothing
// once no entity is left.
func FuzzCleanPrompt(f *testing.F) {
	f.Add("  a&amp;amp;b \t\n&#x;&#0;&copy c  ")
	f.Add("&#128512;\u3000\u2028x&lt")
	f.Fuzz(func(t *testing.T, s string) {
		c := CleanPrompt(s)
		if strings.Contains(c, "  ") || strings.HasPrefix(c, " ") || strings.HasSuffix(c, " ") {
			t.Fatalf("CleanPrompt(%q) = %q", s, c)
		}
		if !strings.Contains(c, "&") && CleanPrompt(c) != c {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, c, CleanPrompt(c))
		}
	})
}
