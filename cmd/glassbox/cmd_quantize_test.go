package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tensor"
)

// Quantizing tiny-llama-F32 to Q4_0 must give the bytes llama-quantize
// wrote for every matrix it also made Q4_0 (it chose Q6_K for output).
func TestQuantizeMatchesLlamaQuantize(t *testing.T) {
	src := shared.Path(t, "models/tiny-llama-F32.gguf")
	ref := shared.Path(t, "models/tiny-llama-Q4_0.gguf")
	out := filepath.Join(t.TempDir(), "q4_0.gguf")
	if _, errs, code := runCmd(t, "", "quantize", src, out, "q4_0", "-t", "2"); code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	got, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	want, err := gguf.Open(ref)
	if err != nil {
		t.Fatal(err)
	}
	defer want.Close()
	if ft, err := got.Meta.Uint32("general.file_type"); err != nil || ft != 2 {
		t.Errorf("general.file_type = %d, %v; want 2", ft, err)
	}
	if a, _ := got.Meta.String("general.architecture"); a != "llama" {
		t.Errorf("architecture %q not copied", a)
	}
	same := 0
	for _, wt := range want.Tensors {
		gt, err := got.Tensor(wt.Name)
		if err != nil {
			t.Fatal(err)
		}
		if wt.Type != tensor.Q4_0 && wt.Type != tensor.F32 {
			continue
		}
		if gt.Type != wt.Type || !bytes.Equal(got.Data(gt), want.Data(&wt)) {
			t.Errorf("%s: ours %s, llama-quantize %s, bytes equal %v", wt.Name, gt.Type, wt.Type, bytes.Equal(got.Data(gt), want.Data(&wt)))
		}
		same++
	}
	if same < 15 {
		t.Fatalf("compared only %d tensors", same)
	}
}

func TestQuantizeReportAndFallback(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf") // FFN rows of 172: no 32-block fits
	out := filepath.Join(t.TempDir(), "q4k.gguf")
	stdout, errs, code := runCmd(t, "", "quantize", src, out, "Q4_K", "--json")
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	var rep struct {
		FileType uint32 `json:"file_type"`
		Tensors  []struct {
			Name, From, To, Note string
			NRMSE                float64
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FileType != 14 {
		t.Errorf("file_type %d, want 14", rep.FileType)
	}
	var quantized, fellBack int
	for _, tr := range rep.Tensors {
		switch {
		case tr.To == "F16" && strings.Contains(tr.Note, "fell back"):
			fellBack++
		case tr.To != tr.From:
			quantized++
			if tr.NRMSE <= 0 || tr.NRMSE > 0.15 {
				t.Errorf("%s: NRMSE %g", tr.Name, tr.NRMSE)
			}
		}
	}
	if quantized == 0 || fellBack == 0 {
		t.Errorf("%d quantized, %d fell back: %+v", quantized, fellBack, rep.Tensors)
	}
	f, err := gguf.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestQuantizeErrors(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf")
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bad type", []string{"quantize", src, filepath.Join(dir, "o"), "Q9_9"}, "unknown type"},
		{"activation type", []string{"quantize", src, filepath.Join(dir, "o"), "Q8_K"}, "not a weight format"},
		{"missing input", []string{"quantize", filepath.Join(dir, "none.gguf"), filepath.Join(dir, "o"), "Q8_0"}, "none.gguf"},
		{"same file", []string{"quantize", src, src, "Q8_0"}, "is the input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCmd(t, "", tc.args...)
			if code != 1 || !strings.Contains(errs, tc.want) {
				t.Fatalf("code %d, stderr %q, want %q", code, errs, tc.want)
			}
		})
	}
	if _, _, code := runCmd(t, "", "quantize", src); code != 2 {
		t.Errorf("missing args: code %d, want 2", code)
	}
}
