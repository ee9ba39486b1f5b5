package plan

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tensor"
)

// synthetic writes l as a sparse header-only GGUF and opens it.
func synthetic(t *testing.T, l Llama) *gguf.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "model.gguf")
	if err := l.WriteHeader(path); err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// cpuDevice is a fixed CPU-only device, so tests do not depend on the
// machine running them.
func cpuDevice(ram int64) *Device {
	return &Device{Name: "test", RAMTotal: ram, RAMAvailable: ram, Cores: 2,
		Bandwidth: 20e9, PeakF32: 50e9, PeakInt8: 200e9, Roofline: "fixed for tests"}
}

func TestReadShapeStories(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadShape(f)
	if err != nil {
		t.Fatal(err)
	}
	want := Shape{Arch: "llama", Layers: 5, Dim: 64, HiddenDim: 172, NumHeads: 8, NumKVHeads: 4, HeadDim: 8, VocabSize: 512, CtxTrain: 128}
	got := Shape{Arch: s.Arch, Layers: s.Layers, Dim: s.Dim, HiddenDim: s.HiddenDim, NumHeads: s.NumHeads,
		NumKVHeads: s.NumKVHeads, HeadDim: s.HeadDim, VocabSize: s.VocabSize, CtxTrain: s.CtxTrain}
	if !equalShape(got, want) {
		t.Errorf("shape = %+v, want %+v", got, want)
	}
	if s.WeightBytes() != f.TensorBytes() {
		t.Errorf("components add to %d bytes, directory has %d", s.WeightBytes(), f.TensorBytes())
	}
	if s.Tied || s.OutputBytes != 512*64*4 || s.EmbeddingBytes != 512*64*4 {
		t.Errorf("tied %v, output %d, embedding %d bytes", s.Tied, s.OutputBytes, s.EmbeddingBytes)
	}
}

func equalShape(a, b Shape) bool {
	return a.Arch == b.Arch && a.Layers == b.Layers && a.Dim == b.Dim && a.HiddenDim == b.HiddenDim &&
		a.NumHeads == b.NumHeads && a.NumKVHeads == b.NumKVHeads && a.HeadDim == b.HeadDim &&
		a.VocabSize == b.VocabSize && a.CtxTrain == b.CtxTrain
}

func TestEveryShared(t *testing.T) {
	for _, name := range []string{"tiny-llama-Q4_K_M", "tiny-qwen2-F32", "tiny-phi3-F32", "tiny-llama3rope-F32", "tiny-llama-Q2_K"} {
		t.Run(name, func(t *testing.T) {
			f, err := gguf.Open(shared.Path(t, "models/"+name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p, err := ForModel(f, Options{}, cpuDevice(8*gib))
			if err != nil {
				t.Fatal(err)
			}
			if p.Model.WeightBytes() != f.TensorBytes() {
				t.Errorf("components add to %d bytes, directory has %d", p.Model.WeightBytes(), f.TensorBytes())
			}
			if !p.Fits || !strings.HasPrefix(p.Verdict, "fits, ~") {
				t.Errorf("verdict %q", p.Verdict)
			}
			if p.Model.Tied != (name == "tiny-qwen2-F32") {
				t.Errorf("tied = %v", p.Model.Tied)
			}
		})
	}
}

func TestLlama3_8BHeader(t *testing.T) {
	f := synthetic(t, Llama3_8B)
	s, err := ReadShape(f)
	if err != nil {
		t.Fatal(err)
	}
	// Meta's Llama 3 8B has 8,030,261,248 parameters.
	if s.Params != 8030261248 {
		t.Errorf("params = %d, want 8030261248", s.Params)
	}
	// Published Q4_K_M files of Llama 3 8B are 4.92 GB.
	if s.FileBytes < 4.85e9 || s.FileBytes > 4.95e9 {
		t.Errorf("file is %d bytes, want about 4.92e9", s.FileBytes)
	}
	if s.FileType != "Q4_K" || s.HeadDim != 128 || s.Tied {
		t.Errorf("file type %s, head dim %d, tied %v", s.FileType, s.HeadDim, s.Tied)
	}
	p, err := ForShape(s, Options{Ctx: 8192}, cpuDevice(64*gib))
	if err != nil {
		t.Fatal(err)
	}
	// 32 layers × 8192 positions × 8 heads × 128 × (K and V) × 2 bytes = 1 GiB.
	if p.Memory.KVCacheBytes != 1<<30 {
		t.Errorf("KV cache = %d, want %d", p.Memory.KVCacheBytes, 1<<30)
	}
	sum := func(m Memory) int64 {
		return m.WeightsBytes + m.EmbeddingBytes + m.LayoutBytes + m.KVCacheBytes + m.ComputeBytes + m.OverheadBytes + m.GCSlackBytes
	}
	if got := sum(p.Memory); got != p.Memory.TotalBytes {
		t.Errorf("components add to %d, total is %d", got, p.Memory.TotalBytes)
	}
	if p.Memory.LayoutBytes != 0 {
		t.Errorf("x16 layout %d bytes on a device without AVX2", p.Memory.LayoutBytes)
	}
	// With AVX2 the Q4_K matrices' tiles are 64 bytes larger per 2304
	// (16 rows × 256 columns); the Q6_K ones and the looked-up embedding
	// (Q4_K in this file) stay as they are.
	d := cpuDevice(64 * gib)
	d.CPUFeatures = []string{"avx", "avx2", "fma", "f16c"}
	x, _ := ForShape(s, Options{Ctx: 8192}, d)
	var want int64
	for _, tn := range f.Tensors {
		if tn.Type == tensor.Q4_K && tn.Name != "token_embd.weight" {
			want += tn.Size * 64 / 2304
		}
	}
	if x.Memory.LayoutBytes != want || want == 0 {
		t.Errorf("x16 layout %d bytes, want %d", x.Memory.LayoutBytes, want)
	}
	if got := sum(x.Memory); got != x.Memory.TotalBytes || x.Memory.TotalBytes != p.Memory.TotalBytes+want {
		t.Errorf("with the x16 layout: components add to %d, total %d (without it %d)", got, x.Memory.TotalBytes, p.Memory.TotalBytes)
	}
	q, _ := ForShape(s, Options{Ctx: 8192, KV: "q8_0"}, cpuDevice(64*gib))
	if want := int64(1<<30) * 34 / 64; q.Memory.KVCacheBytes != want {
		t.Errorf("q8_0 KV cache = %d, want %d", q.Memory.KVCacheBytes, want)
	}
}

func TestVocabOnlyFile(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "vocab/ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = ForModel(f, Options{}, cpuDevice(gib))
	want := "plan: model header: the file has no tensors (a vocabulary-only GGUF?)"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

// TestRequantMatchesLlamaQuantize: the size a model would have in each
// preset, estimated from the F32 file, equals the size of the file
// llama-quantize made (the shared tiny-llama variants).
func TestRequantMatchesLlamaQuantize(t *testing.T) {
	f, err := gguf.Open(shared.Path(t, "models/tiny-llama-F32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := ReadShape(f)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range requantTargets {
		t.Run(q.name, func(t *testing.T) {
			g, err := gguf.Open(shared.Path(t, "models/tiny-llama-"+q.name+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if got, want := s.requant(q).WeightBytes(), g.TensorBytes(); got != want {
				t.Errorf("estimated %d bytes, llama-quantize wrote %d", got, want)
			}
		})
	}
}

// TestSyntheticMatchesLlamaQuantize: a header written for tiny-llama's shape
// in each preset has the tensor bytes of the file llama-quantize made.
func TestSyntheticMatchesLlamaQuantize(t *testing.T) {
	tiny := Llama{Name: "tiny", Layers: 2, Dim: 256, HiddenDim: 512, NumHeads: 4, NumKVHeads: 2, VocabSize: 512, CtxTrain: 256}
	for _, format := range []string{"F32", "F16", "Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K"} {
		t.Run(format, func(t *testing.T) {
			l := tiny
			l.Format = format
			f := synthetic(t, l)
			g, err := gguf.Open(shared.Path(t, "models/tiny-llama-"+format+".gguf"))
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if f.TensorBytes() != g.TensorBytes() {
				t.Errorf("synthetic %d bytes, llama-quantize %d", f.TensorBytes(), g.TensorBytes())
			}
		})
	}
}

// BenchmarkForModel plans Llama 3 8B from its header on a device where it
// does not fit, so every alternative is planned too.
func BenchmarkForModel(b *testing.B) {
	path := filepath.Join(b.TempDir(), "model.gguf")
	if err := Llama3_8B.WriteHeader(path); err != nil {
		b.Fatal(err)
	}
	f, err := gguf.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	dev := cpuDevice(4 * gib)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ForModel(f, Options{}, dev); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParallelArena: sequences decoded together share one batcher, whose
// work session holds the prompt chunk plus a row per sequence (and each
// sequence's session one row): the arena grows by rows, not by copies of
// the batch.
func TestParallelArena(t *testing.T) {
	s, err := ReadShape(synthetic(t, Llama32_1B))
	if err != nil {
		t.Fatal(err)
	}
	arena := func(parallel int) int64 {
		p, err := ForShape(s, Options{Ctx: 1024, Batch: 512, Parallel: parallel}, cpuDevice(64*gib))
		if err != nil {
			t.Fatal(err)
		}
		return p.Memory.ComputeBytes
	}
	one, four := arena(1), arena(4)
	dim, hid := int64(s.Dim), int64(s.HiddenDim)
	qDim, kvDim := int64(s.NumHeads*s.HeadDim), int64(s.NumKVHeads*s.HeadDim)
	perRow := 4*(3*dim+2*qDim+2*kvDim+2*hid) + max(dim, hid, qDim)*34/32
	if want := one + 8*perRow + 3*4*int64(s.VocabSize); four != want {
		t.Errorf("arena at --parallel 4: %d, want %d (one sequence's %d, 8 rows of %d, 3 more logits rows)", four, want, one, perRow)
	}
}

// TestMixtralHeader: a mixture of experts is sized whole for memory and
// by the experts a token goes through for speed.
func TestMixtralHeader(t *testing.T) {
	f := synthetic(t, Mixtral8x7B)
	s, err := ReadShape(f)
	if err != nil {
		t.Fatal(err)
	}
	// Mistral AI's Mixtral 8x7B has 46,702,792,704 parameters.
	if s.Params != 46702792704 || s.Experts != 8 || s.ExpertsUsed != 2 {
		t.Fatalf("params %d, experts %d, used %d", s.Params, s.Experts, s.ExpertsUsed)
	}
	var experts, router int64
	for _, tn := range f.Tensors {
		switch {
		case strings.Contains(tn.Name, "_exps."):
			experts += tn.Size
		case strings.Contains(tn.Name, "ffn_gate_inp"):
			router += tn.Size
			if tn.Type != tensor.F32 {
				t.Errorf("%s is %s; llama-quantize leaves routers in F32", tn.Name, tn.Type)
			}
		}
	}
	var sum int64
	for _, b := range s.ExpertBytes {
		sum += b
	}
	if sum != experts || router == 0 {
		t.Errorf("expert bytes %d, the file's expert tensors %d (routers %d)", sum, experts, router)
	}
	p, err := ForShape(s, Options{Ctx: 4096}, cpuDevice(64*gib))
	if err != nil {
		t.Fatal(err)
	}
	if p.Memory.WeightsBytes < experts {
		t.Errorf("weights memory %d is less than the experts' %d: every expert must be resident", p.Memory.WeightsBytes, experts)
	}
	// A token reads all but 6/8 of the experts' bytes (and the looked-up
	// embedding), plus the KV cache at the planned position.
	pos := int64(p.Speed.DecodeBytesPerToken) - (s.WeightBytes() - s.EmbeddingBytes - experts*6/8)
	if kv := p.Memory.KVBytesPerTok * 2048; pos < kv-kv/100 || pos > kv+kv/100 {
		t.Errorf("decode reads %d bytes per token: %d beyond the active weights, want the KV cache's %d", p.Speed.DecodeBytesPerToken, pos, kv)
	}
	dense := synthetic(t, Llama3_8B)
	ds, _ := ReadShape(dense)
	dp, _ := ForShape(ds, Options{Ctx: 4096}, cpuDevice(64*gib))
	// 12.9B parameters per token against 8.0B: between 1.3 and 2 times
	// the 8B's time per token, for 5.8 times its weights.
	if r := dp.Speed.DecodeTokensPerS / p.Speed.DecodeTokensPerS; r < 1.3 || r > 2 {
		t.Errorf("Mixtral decodes %.1f tok/s, Llama 3 8B %.1f: ratio %.2f", p.Speed.DecodeTokensPerS, dp.Speed.DecodeTokensPerS, r)
	}
	// A requantized copy keeps its routers in F32 and its experts counted.
	q := s.requant(requantTargets[0])
	var qsum int64
	for _, b := range q.ExpertBytes {
		qsum += b
	}
	if qsum <= sum || q.weightTy[tensor.F32] != router {
		t.Errorf("Q8_0 requant: experts %d bytes (Q4_K_M %d), F32 %d (routers %d)", qsum, sum, q.weightTy[tensor.F32], router)
	}
}
