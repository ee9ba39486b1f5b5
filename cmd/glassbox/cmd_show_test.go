package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/modelinfo"
)

// runCmd runs one command line in-process and returns stdout, stderr and
// the exit code.
func runCmd(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), &cmdEnv{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb}, args)
	return out.String(), errb.String(), code
}

func TestShowFacts(t *testing.T) {
	type want struct {
		arch                             string
		layers, dim, heads, kv, ffn, ctx int64
		vocab                            int
		tokModel                         string
		params                           int64
	}
	tiny := func(arch string, layers, ffn int64) want {
		return want{arch, layers, 256, 4, 2, ffn, 256, 512, "llama", -1}
	}
	tests := map[string]want{
		"models/stories260K.gguf":         {"llama", 5, 64, 8, 4, 172, 128, 512, "llama", 292800},
		"models/tiny-llama-F32.gguf":      tiny("llama", 2, 512),
		"models/tiny-llama-Q4_K_M.gguf":   tiny("llama", 2, 512),
		"models/tiny-qwen2-Q8_0.gguf":     tiny("qwen2", 2, 512),
		"models/tiny-phi3-F32.gguf":       tiny("phi3", 1, 256),
		"models/tiny-llama3rope-F32.gguf": tiny("llama", 1, 256),
		"vocab/ggml-vocab-llama-spm.gguf": {"llama", 32, 4096, 32, 32, 11008, 4096, 32000, "llama", 0},
		"vocab/ggml-vocab-phi-3.gguf":     {"phi3", 32, 3072, 32, 32, 8192, 4096, 32064, "llama", 0},
		"vocab/ggml-vocab-gpt-2.gguf":     {"gpt2", -1, -1, -1, -1, -1, -1, 50257, "gpt2", 0},
		"vocab/ggml-vocab-bert-bge.gguf":  {"bert", -1, -1, -1, -1, -1, -1, 30522, "bert", 0},
		"vocab/ggml-vocab-falcon.gguf":    {"falcon", -1, -1, -1, -1, -1, -1, 65024, "gpt2", 0},
		"vocab/ggml-vocab-baichuan.gguf":  {"baichuan", -1, -1, -1, -1, -1, -1, 64000, "llama", 0},
	}
	for rel, w := range tests {
		t.Run(rel, func(t *testing.T) {
			out, errs, code := runCmd(t, "", "show", "--json", "-m", shared.Path(t, rel))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			var in modelinfo.Info
			if err := json.Unmarshal([]byte(out), &in); err != nil {
				t.Fatal(err)
			}
			if in.Architecture != w.arch {
				t.Errorf("architecture %q, want %q", in.Architecture, w.arch)
			}
			check := func(name string, got *int64, want int64) {
				if want < 0 {
					return
				}
				if got == nil || *got != want {
					t.Errorf("%s = %v, want %d", name, got, want)
				}
			}
			check("layers", in.BlockCount, w.layers)
			check("dim", in.EmbeddingDim, w.dim)
			check("heads", in.HeadCount, w.heads)
			check("kv heads", in.HeadCountKV, w.kv)
			check("ffn", in.FeedForwardDim, w.ffn)
			check("context", in.ContextLength, w.ctx)
			if in.Tokenizer == nil || in.Tokenizer.VocabSize != w.vocab || in.Tokenizer.Model != w.tokModel {
				t.Errorf("tokenizer %+v, want %s with %d tokens", in.Tokenizer, w.tokModel, w.vocab)
			}
			if w.params >= 0 && in.Parameters != w.params {
				t.Errorf("parameters %d, want %d", in.Parameters, w.params)
			}
		})
	}
}

func TestShowText(t *testing.T) {
	out, _, code := runCmd(t, "", "show", "-m", shared.Path(t, "models/tiny-qwen2-F32.gguf"), "--tensors")
	if code != 0 {
		t.Fatal(code)
	}
	for _, s := range []string{"architecture           qwen2", "base 1000000", "blk.0.attn_q.bias", "norm eps               1e-06"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
}

func TestShowErrors(t *testing.T) {
	tests := []struct{ name, arg, want string }{
		{"missing file", "/no/such/model.gguf", `load: model "/no/such/model.gguf"`},
		{"not gguf", "main.go", `load: main.go: at byte 0: not a GGUF file`},
		{"directory", ".", "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCmd(t, "", "show", "-m", tc.arg)
			if code != 1 || !strings.Contains(errs, tc.want) || strings.Count(errs, "\n") != 1 {
				t.Fatalf("exit %d, stderr %q; want one line containing %q", code, errs, tc.want)
			}
		})
	}
}
