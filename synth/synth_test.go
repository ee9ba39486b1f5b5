package synth

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/kernel"
	"github.com/glassbox-ai/glassbox/tensor"
)

func writeTiny(t *testing.T, o Options) *gguf.File {
	t.Helper()
	var buf bytes.Buffer
	if err := Write(context.Background(), &buf, o); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRoundTrip writes the tiny preset in every format and reads it back:
// metadata, shapes, dtypes (the llama-quantize mix) and sizes.
func TestRoundTrip(t *testing.T) {
	for _, format := range Formats() {
		t.Run(format, func(t *testing.T) {
			o := Options{Config: Presets["tiny"], Format: format, Seed: 1}
			f := writeTiny(t, o)
			c := o.Config
			ints := map[string]int64{
				"llama.context_length": 256, "llama.embedding_length": 256, "llama.block_count": 2,
				"llama.feed_forward_length": 512, "llama.attention.head_count": 4, "llama.attention.head_count_kv": 2,
				"llama.rope.dimension_count": 64, "llama.vocab_size": 512, "general.file_type": int64(formats[format].ftype),
				"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
			}
			for k, want := range ints {
				if got, err := f.Meta.Int(k); err != nil || got != want {
					t.Errorf("%s = %d, %v; want %d", k, got, err, want)
				}
			}
			if a, _ := f.Meta.Architecture(); a != "llama" {
				t.Errorf("architecture %q", a)
			}
			for k, want := range map[string]float64{"llama.rope.freq_base": 10000, "llama.attention.layer_norm_rms_epsilon": 1e-5} {
				if got, err := f.Meta.Float(k); err != nil || math.Abs(got-want) > want*1e-6 {
					t.Errorf("%s = %v, %v; want %v", k, got, err, want)
				}
			}
			toks, err := f.Meta.Strings("tokenizer.ggml.tokens")
			if err != nil || len(toks) != 512 {
				t.Fatalf("tokens: %d, %v", len(toks), err)
			}
			want, err := o.Tensors()
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Tensors) != 2+9*c.Layers+1 || len(f.Tensors) != len(want) {
				t.Fatalf("%d tensors, want %d", len(f.Tensors), len(want))
			}
			for i, ti := range f.Tensors {
				w := want[i]
				if ti.Name != w.Name || ti.Type != w.Type || !equal(ti.Shape, w.Shape) {
					t.Errorf("tensor %d: %s %v %s, want %s %v %s", i, ti.Name, ti.Shape, ti.Type, w.Name, w.Shape, w.Type)
				}
				if strings.Contains(ti.Name, "norm") && ti.Type != tensor.F32 {
					t.Errorf("%s is %s, norms must be F32", ti.Name, ti.Type)
				}
				size, _ := ti.Type.RowBytes(elements(ti.Shape))
				if got := int64(len(f.Data(&ti))); got != size {
					t.Errorf("%s: %d bytes of data, want %d", ti.Name, got, size)
				}
			}
		})
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestMixes pins the llama-quantize tensor types against the shared
// tiny-llama files that llama-quantize itself wrote (same shape).
func TestMixes(t *testing.T) {
	for _, format := range []string{"Q4_K_M", "Q5_K_M", "Q3_K_M", "Q2_K", "Q4_0", "Q8_0", "Q6_K", "F16", "BF16"} {
		t.Run(format, func(t *testing.T) {
			ref, err := gguf.Open(shared.Path(t, "models/tiny-llama-"+format+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			ts, err := Options{Config: Presets["tiny"], Format: format}.Tensors()
			if err != nil {
				t.Fatal(err)
			}
			for _, tt := range ts {
				rt, err := ref.Tensor(tt.Name)
				if err != nil {
					t.Errorf("%s: not in the reference file", tt.Name)
					continue
				}
				if rt.Type != tt.Type {
					t.Errorf("%s: %s, llama-quantize chose %s", tt.Name, tt.Type, rt.Type)
				}
			}
			if ft, _ := ref.Meta.Int("general.file_type"); ft != int64(formats[format].ftype) {
				t.Errorf("general.file_type %d, llama-quantize wrote %d", formats[format].ftype, ft)
			}
		})
	}
}

func TestMoreBits1B(t *testing.T) {
	ts, err := Options{Config: Presets["1b"], Format: "Q4_K_M"}.Tensors()
	if err != nil {
		t.Fatal(err)
	}
	var q6 []int
	for _, tt := range ts {
		if tt.role == "attn_v" && tt.Type == tensor.Q6_K {
			q6 = append(q6, tt.layer)
		}
	}
	want := []int{0, 1, 4, 7, 10, 13, 14, 15}
	if len(q6) != len(want) {
		t.Fatalf("Q6_K attn_v in layers %v, want %v", q6, want)
	}
	for i := range want {
		if q6[i] != want[i] {
			t.Fatalf("Q6_K attn_v in layers %v, want %v", q6, want)
		}
	}
}

// TestDeterministic: same options give the same bytes whatever the number
// of workers; another seed gives other weights.
func TestDeterministic(t *testing.T) {
	o := Options{Config: Presets["tiny"], Format: "Q4_K_M", Seed: 7}
	var a, b, c bytes.Buffer
	o.Workers = 1
	if err := Write(context.Background(), &a, o); err != nil {
		t.Fatal(err)
	}
	o.Workers = 3
	if err := Write(context.Background(), &b, o); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("1 and 3 workers wrote different files")
	}
	o.Seed = 8
	if err := Write(context.Background(), &c, o); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a.Bytes(), c.Bytes()) || a.Len() != c.Len() {
		t.Fatal("seeds 7 and 8 wrote the same bytes (or different sizes)")
	}
}

// TestWeightStatistics checks the distribution: matrices ≈ N(0, 0.02²),
// norms ≈ 1, and quantized weights decode close to it.
func TestWeightStatistics(t *testing.T) {
	for _, format := range []string{"F32", "Q4_K_M", "Q8_0"} {
		f := writeTiny(t, Options{Config: Presets["tiny"], Format: format, Seed: 3})
		for _, name := range []string{"blk.0.ffn_up.weight", "token_embd.weight", "blk.1.attn_norm.weight"} {
			ti, err := f.Tensor(name)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, elements(ti.Shape))
			if err := kernel.Dequantize(ti.Type, f.Data(ti), x); err != nil {
				t.Fatal(err)
			}
			var sum, sq, maxAbs float64
			for _, v := range x {
				sum += float64(v)
			}
			mean := sum / float64(len(x))
			for _, v := range x {
				sq += (float64(v) - mean) * (float64(v) - mean)
				maxAbs = max(maxAbs, math.Abs(float64(v)-mean))
			}
			std := math.Sqrt(sq / float64(len(x)))
			wantMean := 0.0
			if strings.Contains(name, "norm") {
				wantMean = 1
			}
			tol := 0.05 * Std // sampling error on ≥ 256 values plus quantization
			if strings.Contains(name, "norm") {
				tol = 0.15 * Std
			}
			if math.Abs(mean-wantMean) > 0.2*Std || math.Abs(std-Std) > tol || maxAbs > 3.6*Std {
				t.Errorf("%s %s: mean %.5f std %.5f max|x-mean| %.4f; want mean %v std %v bounded by 3.46σ", format, name, mean, std, maxAbs, wantMean, Std)
			}
		}
	}
}

func TestVocabFrom(t *testing.T) {
	src, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := Presets["tiny"]
	c.VocabSize = 99 // replaced by the file's 512
	f := writeTiny(t, Options{Config: c, Format: "F16", VocabFrom: src})
	want, _ := src.Meta.Strings("tokenizer.ggml.tokens")
	got, err := f.Meta.Strings("tokenizer.ggml.tokens")
	if err != nil || len(got) != len(want) || got[300] != want[300] {
		t.Fatalf("tokens not copied: %d vs %d, %v", len(got), len(want), err)
	}
	if n, _ := f.Meta.Int("llama.vocab_size"); n != 512 {
		t.Errorf("llama.vocab_size = %d, want 512", n)
	}
	emb, _ := f.Tensor("token_embd.weight")
	if emb.Shape[0] != 512 {
		t.Errorf("token_embd rows %d, want 512", emb.Shape[0])
	}
	for _, kv := range src.Meta.KVs {
		if strings.HasPrefix(kv.Key, "tokenizer.") && !f.Meta.Has(kv.Key) {
			t.Errorf("%s not copied", kv.Key)
		}
	}
}

func TestSyntheticVocab(t *testing.T) {
	for _, n := range []int{354, 512, 32000} {
		toks, scores, types, err := SyntheticVocab(n)
		if err != nil {
			t.Fatal(err)
		}
		if len(toks) != n || len(scores) != n || len(types) != n {
			t.Fatalf("n=%d: lengths %d %d %d", n, len(toks), len(scores), len(types))
		}
		seen := map[string]bool{}
		for i, tok := range toks {
			if tok == "" || seen[tok] {
				t.Fatalf("n=%d: token %d %q is empty or repeated", n, i, tok)
			}
			seen[tok] = true
			if i >= 3 && i < 259 && (types[i] != tokByte || tok != "<0x"+strings.ToUpper(string("0123456789abcdef"[(i-3)>>4])+string("0123456789abcdef"[(i-3)&15]))+">") {
				t.Fatalf("token %d = %q type %d, want byte token", i, tok, types[i])
			}
			if i > 259 && scores[i] >= scores[i-1] {
				t.Fatalf("scores not descending at %d", i)
			}
		}
		// Every multi-character piece is two shorter pieces joined.
		for _, tok := range toks[259+95:] {
			r := []rune(tok)
			if !seen[string(r[:len(r)-1])] || !seen[string(r[len(r)-1:])] {
				t.Fatalf("n=%d: piece %q cannot be merged from pieces in the vocabulary", n, tok)
			}
		}
	}
	if _, _, _, err := SyntheticVocab(300); err == nil {
		t.Error("300 tokens: no error")
	}
}

func TestBadOptions(t *testing.T) {
	tiny := Presets["tiny"]
	odd := tiny
	odd.Dim = 200 // not a multiple of 32 or 256
	heads := tiny
	heads.NumKVHeads = 3
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"unknown format", Options{Config: tiny, Format: "Q9_X"}, `weight format "Q9_X" is not supported`},
		{"row not a block multiple", Options{Config: odd, Format: "Q4_K_M"}, "do not fit"},
		{"kv heads", Options{Config: heads, Format: "F32"}, "not a multiple of kv heads"},
		{"zero layers", Options{Config: Config{Name: "z", Dim: 256, NumHeads: 4, NumKVHeads: 4, HiddenDim: 256, VocabSize: 512, CtxLen: 8, RopeBase: 1, NormEps: 1}, Format: "F32"}, "layers = 0"},
		{"small vocab", Options{Config: Config{Name: "v", Dim: 256, Layers: 1, NumHeads: 4, NumKVHeads: 4, HiddenDim: 256, VocabSize: 10, CtxLen: 8, RopeBase: 1, NormEps: 1}, Format: "F32"}, "at least"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Write(context.Background(), &bytes.Buffer{}, tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestWriteFileCancelled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.gguf")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := WriteFile(ctx, path, Options{Config: Presets["tiny"], Format: "F32"}); err == nil {
		t.Fatal("cancelled write succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %d files behind: %v", len(ents), ents[0].Name())
	}
	if err := WriteFile(context.Background(), path, Options{Config: Presets["tiny"], Format: "Q8_0"}); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestParams(t *testing.T) {
	// 1b: 2·32000·2048 + 16·(2·2048² + 2·2048·512 + 3·2048·8192 + 2·2048) + 2048.
	if got, want := Presets["1b"].Params(), int64(1_104_218_112); got != want {
		t.Errorf("1b params = %d, want %d", got, want)
	}
	if got := Presets["134m"].Params(); got < 130e6 || got > 140e6 {
		t.Errorf("134m params = %d", got)
	}
}
