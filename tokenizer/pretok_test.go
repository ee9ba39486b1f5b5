package tokenizer

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"
)

// TestPretokenizers checks every scanner against the splits Python's
// regex module makes with llama.cpp's expressions (testdata/gen_pretok.py).
func TestPretokenizers(t *testing.T) {
	b, err := os.ReadFile("testdata/pretok.json")
	if err != nil {
		t.Fatal(err)
	}
	var golden struct {
		Texts  []string
		Splits map[string][][]string
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	pts := map[string]*pretokenizer{
		"gpt-2": ptGPT2, "llama3": ptLlama3, "qwen2": ptQwen2, "falcon": ptFalcon, "starcoder": ptStarcoder,
		"default": ptDefault, "deepseek-llm": ptDeepseekLLM, "deepseek-coder": ptDeepseekCoder,
		"bloom": ptBloom, "viking": ptViking, "gpt-4o": ptGPT4o, "tekken": ptTekken,
		"deepseek-v3": ptDeepseek3, "qwen35": ptQwen35,
	}
	if len(golden.Splits) != len(pts) {
		t.Fatalf("golden file has %d pre-tokenizers, test knows %d", len(golden.Splits), len(pts))
	}
	for name, want := range golden.Splits {
		pt := pts[name]
		t.Run(name, func(t *testing.T) {
			for i, text := range golden.Texts {
				if got := splitWords(pt, text); !reflect.DeepEqual(got, want[i]) && !(len(got) == 0 && len(want[i]) == 0) {
					t.Errorf("%q:\n got %q\nwant %q", text, got, want[i])
				}
			}
		})
	}
}

func splitWords(pt *pretokenizer, text string) []string {
	var r runes
	r.reset(text)
	ends, _ := pt.split(&r, nil, nil)
	var words []string
	lo := 0
	for _, hi := range ends {
		if hi > lo {
			words = append(words, string(r.cp[lo:hi]))
		}
		lo = hi
	}
	return words
}

// TestPreNames checks that every name the issue lists resolves, with
// llama.cpp's settings.
func TestPreNames(t *testing.T) {
	for _, c := range []struct {
		name   string
		pt     *pretokenizer
		ignore bool
	}{
		{"", ptDefault, false}, {"default", ptDefault, false}, {"gpt-2", ptGPT2, false},
		{"llama3", ptLlama3, true}, {"llama-bpe", ptLlama3, true}, {"qwen2", ptQwen2, false},
		{"deepseek-llm", ptDeepseekLLM, false}, {"deepseek-coder", ptDeepseekCoder, false},
		{"falcon", ptFalcon, false}, {"mpt", ptGPT2, false}, {"starcoder", ptStarcoder, false},
		{"refact", ptStarcoder, false}, {"command-r", ptStarcoder, false}, {"phi-2", ptGPT2, false},
		{"olmo", ptGPT2, false}, {"smollm", ptStarcoder, false}, {"bloom", ptBloom, false}, {"viking", ptViking, false},
		{"gpt-4o", ptGPT4o, false}, {"llama4", ptGPT4o, false}, {"tekken", ptTekken, true}, {"deepseek-v3", ptDeepseek3, false}, {"qwen35", ptQwen35, false},
	} {
		cfg, err := lookupPre(c.name)
		if err != nil {
			t.Errorf("%q: %v", c.name, err)
			continue
		}
		if cfg.pt != c.pt || cfg.ignoreMerges != c.ignore {
			t.Errorf("%q: got %s ignoreMerges=%v, want %s %v", c.name, cfg.pt.name, cfg.ignoreMerges, c.pt.name, c.ignore)
		}
	}
	if _, err := lookupPre("no-such-pre"); err == nil {
		t.Error("unknown pre-tokenizer accepted")
	}
}
