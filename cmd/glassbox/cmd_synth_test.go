package main

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/model"
	"github.com/glassbox-ai/glassbox/synth"
)

func TestSynthCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tiny.gguf")
	stories := shared.Path(t, "models/stories260K.gguf")
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantCode int
	}{
		{"tiny Q4_K_M", []string{"-o", out, "--preset", "tiny", "--type", "Q4_K_M", "--seed", "5"}, "", 0},
		{"vocab from a file", []string{"-o", out, "--preset", "tiny", "--type", "F16", "--vocab", stories, "-q"}, "", 0},
		{"shape overrides", []string{"-o", out, "--preset", "134m", "--type", "Q8_0", "--layers", "2", "--dim", "256", "--heads", "4", "--kv-heads", "4", "--ffn", "256", "--vocab-size", "1000", "-q"}, "", 0},
		{"bad override", []string{"-o", out, "--preset", "tiny", "--heads", "3"}, "not a multiple of heads 3", 1},
		{"no output", []string{"--preset", "tiny"}, "-o OUT.gguf is required", 2},
		{"no preset", []string{"-o", out}, "--preset is required", 2},
		{"unknown preset", []string{"-o", out, "--preset", "70b"}, `unknown preset "70b"`, 2},
		{"unknown type", []string{"-o", out, "--preset", "tiny", "--type", "Q7"}, `weight format "Q7" is not supported`, 1},
		{"arch with a preset", []string{"-o", out, "--preset", "tiny", "--arch", "gemma2", "--type", "Q4_K_M", "--window", "16", "-q"}, "", 0},
		{"unknown arch", []string{"-o", out, "--preset", "tiny", "--arch", "mamba"}, `architecture "mamba" is not supported`, 1},
		{"dense arch with experts", []string{"-o", out, "--preset", "moe-tiny", "--arch", "qwen3"}, "qwen3 is dense", 1},
		{"mixture without experts", []string{"-o", out, "--preset", "tiny", "--arch", "qwen3moe"}, "qwen3moe is a mixture of experts", 1},
		{"bad yarn", []string{"-o", out, "--preset", "tiny", "--yarn", "0.5"}, "YaRN factor 0.5", 1},
		{"missing vocab file", []string{"-o", out, "--preset", "tiny", "--vocab", filepath.Join(dir, "nope")}, "load:", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, "", append([]string{"synth"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit code %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if tt.wantErr != "" && !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tt.wantErr)
			}
			if code == 0 {
				f, err := gguf.Open(out)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				arch, _ := f.Meta.Architecture()
				if n, _ := f.Meta.Int(arch + ".block_count"); n != 2 {
					t.Errorf("block_count %d", n)
				}
			}
		})
	}
}

// TestSynthMoE: synth writes a mixture of experts that show and bench
// describe and run (a token reading its experts only); a bad expert count
// is refused.
func TestSynthMoE(t *testing.T) {
	out := filepath.Join(t.TempDir(), "moe.gguf")
	if _, errs, code := runCmd(t, "", "synth", "-o", out, "--preset", "moe-tiny", "--type", "Q8_0", "--experts", "6", "--experts-used", "3", "-q"); code != 0 {
		t.Fatal(errs)
	}
	if show, _, _ := runCmd(t, "", "show", "-m", out); !strings.Contains(show, "experts                6, 3 per token") {
		t.Errorf("show: %s", show)
	}
	bench, errs, code := runCmd(t, "", "bench", "-m", out, "-p", "8", "-n", "4", "-r", "1")
	if code != 0 || !strings.Contains(bench, "read per token (3 of 6 experts)") || !strings.Contains(bench, "tg4") {
		t.Errorf("bench: exit %d, %s %s", code, bench, errs)
	}
	if _, errs, code := runCmd(t, "", "synth", "-o", out, "--preset", "moe-tiny", "--experts-used", "9"); code != 1 || !strings.Contains(errs, "experts used 9 must be between 1 and experts 4") {
		t.Errorf("bad experts used: exit %d, %s", code, errs)
	}
}

// TestSynthArchs: synth --arch writes a file of each architecture that
// its glassbox loader binds, with the configuration synth meant (window,
// experts, shared expert, YaRN), and that runs to finite logits.
func TestSynthArchs(t *testing.T) {
	dir := t.TempDir()
	ids := "1 5 99 200 17 300 45 2 77 123 400 8"
	tests := []struct {
		arch, preset string
		extra        []string
		check        func(c model.Config) bool
	}{
		{"llama", "moe-tiny", nil, func(c model.Config) bool { return c.Experts == 4 && c.RopeBase == 10000 }},
		{"qwen2", "tiny", []string{"--yarn", "4"}, func(c model.Config) bool {
			return c.RopeYaRN != nil && c.RopeYaRN.Factor == 4 && c.RopeYaRN.OrigCtx == 64 && c.RopeBase == 1e6
		}},
		{"qwen2moe", "moe-tiny", nil, func(c model.Config) bool {
			return c.Experts == 4 && c.ExpertHiddenDim == 256 && c.ExpertSharedHiddenDim == 512 && c.ExpertProbs
		}},
		{"qwen3", "tiny", nil, func(c model.Config) bool { return c.HeadDim == 64 && c.NormEps == 1e-6 }},
		{"qwen3moe", "moe-tiny", []string{"--yarn", "2"}, func(c model.Config) bool {
			return c.Experts == 4 && c.ExpertHiddenDim == 256 && c.RopeYaRN != nil && c.RopeYaRN.OrigCtx == 128
		}},
		{"gemma2", "tiny", nil, func(c model.Config) bool { return c.SlidingWindow == 8 }},
		{"gemma3", "tiny", []string{"--window", "5"}, func(c model.Config) bool { return c.SlidingWindow == 5 && c.RopeBase == 1e6 }},
		{"granite", "tiny", nil, func(c model.Config) bool { return c.Experts == 0 }},
		{"granitemoe", "moe-tiny", nil, func(c model.Config) bool { return c.Experts == 4 && c.ExpertHiddenDim == 256 }},
		{"phi3", "tiny", nil, func(c model.Config) bool { return c.SlidingWindow == 0 }},
		{"gpt-oss", "moe-tiny", []string{"--yarn", "4"}, func(c model.Config) bool {
			return c.Experts == 4 && c.SlidingWindow == 8 && c.RopeYaRN != nil && c.RopeBase == 150000
		}},
	}
	for _, tt := range tests {
		t.Run(tt.arch, func(t *testing.T) {
			path := filepath.Join(dir, tt.arch+".gguf")
			args := append([]string{"synth", "-o", path, "--preset", tt.preset, "--arch", tt.arch, "--type", "Q8_0", "-q"}, tt.extra...)
			if _, errs, code := runCmd(t, "", args...); code != 0 {
				t.Fatalf("synth: exit %d: %s", code, errs)
			}
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			m, err := model.Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if c := m.Config(); c.Arch != tt.arch || !tt.check(c) {
				t.Errorf("config %+v", c)
			}
			logits := synthLogits(t, path, ids)
			for i, x := range logits {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("logit %d is %v", i, x)
				}
			}
		})
	}
}

// TestSynthWindow: gemma2's and gemma3's local layers see the window
// synth writes: a window of 4 and one of 64 give the same logits for the
// first 4 positions and others after them.
func TestSynthWindow(t *testing.T) {
	ids := "1 5 99 200 17 300 45 2 77 123 400 8"
	for _, arch := range []string{"gemma2", "gemma3", "gpt-oss"} {
		t.Run(arch, func(t *testing.T) {
			preset := "tiny"
			if arch == "gpt-oss" { // every block a mixture of experts
				preset = "moe-tiny"
			}
			var logits [2][]float32
			for i, w := range []string{"4", "64"} {
				path := filepath.Join(t.TempDir(), arch+".gguf")
				if _, errs, code := runCmd(t, "", "synth", "-o", path, "--preset", preset, "--arch", arch, "--type", "F32", "--window", w, "-q"); code != 0 {
					t.Fatalf("synth: %s", errs)
				}
				logits[i] = synthLogits(t, path, ids)
			}
			vocab := len(logits[0]) / 12
			for pos := range 12 {
				same := slices.Equal(logits[0][pos*vocab:(pos+1)*vocab], logits[1][pos*vocab:(pos+1)*vocab])
				if same != (pos < 4) {
					t.Errorf("position %d: same logits %v with windows 4 and 64", pos, same)
				}
			}
		})
	}
}

func synthLogits(t *testing.T, path, ids string) []float32 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "logits.f32")
	if _, errs, code := runCmd(t, "", "logits", "-m", path, "--ids", ids, "-o", out, "--kv", "f32"); code != 0 {
		t.Fatalf("logits: exit %d: %s", code, errs)
	}
	return readF32File(t, out)
}

// TestSynthSD1Usage: what --arch sd1 refuses (writing the file itself is
// tested in package synth, byte for byte).
func TestSynthSD1Usage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sd.safetensors")
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"quantized", []string{"-o", out, "--arch", "sd1", "--type", "Q8_0"}, `F16 or F32 weights, not "Q8_0"`},
		{"preset", []string{"-o", out, "--arch", "sd1", "--preset", "tiny"}, "drop --preset"},
		{"no output", []string{"--arch", "sd1"}, "-o OUT.safetensors is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, "", append([]string{"synth"}, tt.args...)...)
			if code != 2 || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, errOut, tt.wantErr)
			}
		})
	}
}

// TestSynthWan: --arch wan writes the golden umt5-tiny and dit-tiny files
// (seed and type defaulting to the golden's) and refuses what it cannot
// write.
func TestSynthWan(t *testing.T) {
	dir := t.TempDir()
	for kind, want := range map[string]string{
		"umt5-tiny": "b52eb1a9c6605e7c5793712f24617baac1f80d5828e11ad4f060fddabed2846e",
		"dit-tiny":  "cdaebe3dfe3952d626a68cda20d22c601231dc069976f1d40c19f365e7e7510c",
	} {
		out := filepath.Join(dir, kind+".safetensors")
		if _, errs, code := runCmd(t, "", "synth", "--arch", "wan", "--kind", kind, "-o", out); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != want {
			t.Errorf("%s: sha256 %x, want %s", kind, sum, want)
		}
	}
	for _, tt := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"kind", []string{"--kind", "dit-9b"}, "needs --kind " + strings.Join(synth.WanKinds(), " or ") + ` (got "dit-9b")`},
		{"quantized", []string{"--kind", "umt5-tiny", "--type", "Q8_0"}, `F32 or F16 weights, not "Q8_0"`},
		{"preset", []string{"--kind", "umt5-tiny", "--preset", "tiny"}, "drop --preset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, "", append([]string{"synth", "--arch", "wan", "-o", filepath.Join(dir, "x")}, tt.args...)...)
			if code != 2 || !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", code, errOut, tt.wantErr)
			}
		})
	}
}
