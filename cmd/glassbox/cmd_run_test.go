package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestRunGreedyText is the acceptance test of issue 5: the greedy text of
// stories260K for each golden prompt, exactly, without the prompt.
func TestRunGreedyText(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	for i := 1; i <= 4; i++ {
		dir := filepath.Dir(shared.Path(t, "golden/manifest.json"))
		prompt := readText(t, filepath.Join(dir, "stories260K.prompt"+string(rune('0'+i))+".txt"))
		want := readText(t, filepath.Join(dir, "stories260K.prompt"+string(rune('0'+i))+".greedy200.txt"))
		out, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "200", "--ctx", "256", prompt)
		if code != 0 {
			t.Fatalf("prompt %d: exit %d: %s", i, code, errOut)
		}
		// The golden text is the detokenized prompt + continuation, with
		// SentencePiece's leading space.
		if wantCont := strings.TrimPrefix(want, " "+prompt); out != wantCont {
			t.Errorf("prompt %d:\n got %q\nwant %q", i, out, wantCont)
		}
		if !strings.Contains(errOut, "warning") || !strings.Contains(errOut, "128") {
			t.Errorf("prompt %d: --ctx 256 > trained 128 should warn; stderr %q", i, errOut)
		}
	}
}

func readText(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(string(b), "\n")
}

func TestRunJSONAndIDs(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	out, errOut, code := runCmd(t, "", "run", "-m", m, "--prompt-ids", "1 403 407 261 378", "--temp", "0", "-n", "5", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var tokens []int
	var result map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e struct {
			Type   string            `json:"type"`
			Token  *struct{ ID int } `json:"token"`
			Result json.RawMessage   `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch e.Type {
		case "token":
			tokens = append(tokens, e.Token.ID)
		case "result":
			json.Unmarshal(e.Result, &result)
		}
	}
	want := []int{432, 383, 286, 261, 376}
	if len(tokens) != 5 || tokens[0] != want[0] || tokens[4] != want[4] {
		t.Errorf("token events %v, want %v", tokens, want)
	}
	if result == nil || result["stop_reason"] != "length" || result["text"] != ", there was a little" {
		t.Errorf("result %v", result)
	}
}

func TestRunErrors(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	long := strings.Repeat("Lily and Ben went to the park. ", 20)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"prompt too long", []string{"run", "-m", m, "--ctx", "16", long}, []string{"encode:", "tokens", "context holds 16"}},
		{"id outside vocab", []string{"run", "-m", m, "--prompt-ids", "1 9999"}, []string{"encode:", "9999", "512"}},
		{"bad temperature", []string{"run", "-m", m, "--temp", "-1", "x"}, []string{"temperature"}},
		{"unknown format", []string{"run", "-m", m, "--format", "yaml", "x"}, []string{"--format", `"yaml"`, `"json"`}},
		{"unsupported arch", []string{"run", "-m", writeArch(t, "mamba"), "x"}, []string{"load:", `"mamba" is not supported`, "llama"}},
		{"no model", []string{"run", "x"}, []string{"load:", "no model"}},
		// stories260K's heads have 8 dimensions: a q8_0 cache is refused
		// before loading, with the number.
		{"q8_0 cache on small heads", []string{"run", "-m", m, "--kv", "q8_0", "x"}, []string{"plan:", "--kv q8_0", "multiples of 32", "have 8"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, "", tc.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not contain %q", errOut, w)
				}
			}
		})
	}
}

// TestRunKVQ8 runs a model whose heads take a q8_0 KV cache with one:
// the job's plan and stages name the cache type, and the greedy text is
// made (it may differ from F16's after a few tokens on the synthetic
// model: the cache rounds keys and values). An unknown type is a usage
// error.
func TestRunKVQ8(t *testing.T) {
	m := shared.Path(t, "models/tiny-llama-Q8_0.gguf")
	out, errOut, code := runCmd(t, "", "run", "-m", m, "--kv", "q8_0", "--temp", "0", "-n", "8", "--ctx", "64", "--verbose", "Once upon a time")
	if code != 0 || out == "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if !strings.Contains(errOut, "q8_0") {
		t.Errorf("the verbose explanation does not name the q8_0 cache:\n%s", errOut)
	}
	_, errOut, code = runCmd(t, "", "run", "-m", m, "--kv", "q4_0", "x")
	if code != 2 || !strings.Contains(errOut, "supported: f16, q8_0, f32") {
		t.Errorf("--kv q4_0: exit %d, stderr %q", code, errOut)
	}
}

// writeArch writes a header-only GGUF file of the given architecture.
func writeArch(t *testing.T, arch string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), arch+".gguf")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	var meta gguf.Metadata
	meta.Set("general.architecture", arch)
	if err := gguf.Write(f, &meta, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

func TestLogitsMatchesGolden(t *testing.T) {
	m := shared.Path(t, "models/tiny-llama-F32.gguf")
	ids := readText(t, shared.Path(t, "golden/seq48.ids"))
	ref := readF32File(t, shared.Path(t, "golden/tiny-llama-F32.seq48.logits.f32"))
	for _, mode := range []string{"batch", "one-by-one"} {
		out := filepath.Join(t.TempDir(), "l.f32")
		args := []string{"logits", "-m", m, "--ids", ids, "-o", out}
		if mode == "one-by-one" {
			args = append(args, "--one-by-one")
		}
		if _, errOut, code := runCmd(t, "", args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errOut)
		}
		got := readF32File(t, out)
		if len(got) != len(ref) {
			t.Fatalf("%s: %d floats, want %d", mode, len(got), len(ref))
		}
		var num, den float64
		for i := range ref {
			d := float64(got[i] - ref[i])
			num += d * d
			den += float64(ref[i]) * float64(ref[i])
		}
		if e := num / den; e > 2e-6 {
			t.Errorf("%s: NMSE %.3g > 2e-6", mode, e)
		}
	}
}

func readF32File(t *testing.T, p string) []float32 {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func TestPerplexityCommand(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	for _, input := range [][]string{
		{"-f", shared.Path(t, "golden/ppl.txt")},
		{"--ids-file", shared.Path(t, "golden/ppl.ids")},
	} {
		args := append([]string{"perplexity", "-m", m, "--ctx", "128", "--json"}, input...)
		out, errOut, code := runCmd(t, "", args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", input, code, errOut)
		}
		var r struct {
			PPL    float64 `json:"ppl"`
			Tokens int     `json:"tokens"`
			Scored int     `json:"scored"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.Tokens != 1444 || r.Scored != 693 || math.Abs(r.PPL-3.8827) > 0.002 {
			t.Errorf("%v: perplexity %+v, want PPL 3.8827 ± 0.002 over 1444 tokens, 693 scored", input, r)
		}
	}
}

func TestBenchModel(t *testing.T) {
	defer func(n int64) { benchProbeBytes = n }(benchProbeBytes)
	benchProbeBytes = 8 << 20
	m := shared.Path(t, "models/stories260K.gguf")
	out, errOut, code := runCmd(t, "", "bench", "-m", m, "-p", "16", "-n", "8", "-r", "2", "-t", "1", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var r benchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.PPMean <= 0 || r.TGMean <= 0 || r.ReadGBs <= 0 || r.TGLimit <= 0 || r.Prompt != 16 || r.Gen != 8 || r.Params != 292800 {
		t.Errorf("bench result %+v", r)
	}
	if r.TGOfLimitPaired <= 0 || r.ReadGBsPairedMed <= 0 || r.TGPairedMin > r.TGOfLimitPaired || r.TGPairedMax < r.TGOfLimitPaired ||
		r.TGOfLimitBest <= 0 || r.ReadGBsBestMed <= 0 {
		t.Errorf("paired fractions: median %v in [%v, %v], read %v GB/s; against the best passes %v at %v GB/s",
			r.TGOfLimitPaired, r.TGPairedMin, r.TGPairedMax, r.ReadGBsPairedMed, r.TGOfLimitBest, r.ReadGBsBestMed)
	}
	// The profiled pass: its parts add up to the step, and the matrices
	// read (per token) the bytes bench divides the bandwidth by.
	if r.MatrixMS <= 0 || r.AttentionMS <= 0 || r.RestMS < 0 || r.MatrixGBs <= 0 ||
		math.Abs(r.MatrixMS+r.AttentionMS+r.RestMS-r.StepMS) > 1e-9*r.StepMS+1e-12 {
		t.Errorf("tg breakdown: step %v ms = matrix %v + attention %v + rest %v; matrix %v GB/s", r.StepMS, r.MatrixMS, r.AttentionMS, r.RestMS, r.MatrixGBs)
	}
	if got := r.MatrixGBs * r.MatrixMS / 1e3 * 1e9; math.Abs(got-float64(r.ReadBytes)) > 0.05*float64(r.ReadBytes) {
		t.Errorf("matrices read %.0f bytes per token, bench's weight bytes per token are %d", got, r.ReadBytes)
	}

	// From a context of 20 tokens: the tg steps sit at positions 20..27,
	// so they read 20+4 entries of KV cache per layer on average, 6 times
	// what they read from an empty one (0+4), and the limit counts them.
	out, errOut, code = runCmd(t, "", "bench", "-m", m, "-p", "16", "-n", "8", "-d", "20", "-r", "1", "-t", "1", "--json")
	if code != 0 {
		t.Fatalf("-d 20: exit %d: %s", code, errOut)
	}
	var d benchResult
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Depth != 20 || d.DepthS <= 0 || d.PPMean <= 0 || d.TGMean <= 0 || r.KVReadBytes <= 0 || d.KVReadBytes != 6*r.KVReadBytes {
		t.Errorf("-d 20: depth %d in %v s, pp %v, tg %v; KV bytes per token %d, from empty %d", d.Depth, d.DepthS, d.PPMean, d.TGMean, d.KVReadBytes, r.KVReadBytes)
	}
	if want := d.ReadGBs * 1e9 / float64(d.ReadBytes+d.KVReadBytes); math.Abs(d.TGLimit-want) > 1e-9*want {
		t.Errorf("-d 20: limit %v tokens/s, want %v (read ÷ weights and KV per token)", d.TGLimit, want)
	}
	out, _, code = runCmd(t, "", "bench", "-m", m, "-p", "16", "-n", "8", "-d", "20", "-r", "1", "-t", "1")
	if code != 0 || !strings.Contains(out, "tg8 @ d20") || !strings.Contains(out, "context of 20 tokens") {
		t.Errorf("-d 20: exit %d, output:\n%s", code, out)
	}
}

// TestRunSeed checks that the same seed and settings give the same text,
// and that sampling does depend on the seed.
func TestRunSeed(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	run := func(seed string) string {
		out, errOut, code := runCmd(t, "", "run", "-m", m, "--seed", seed, "--temp", "1", "-n", "40", "Once upon a time")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		return out
	}
	a, b := run("7"), run("7")
	if a != b || a == "" {
		t.Errorf("seed 7 twice:\n%q\n%q", a, b)
	}
	differ := 0
	for _, seed := range []string{"8", "9", "10"} {
		if run(seed) != a {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("seeds 8, 9, 10 all gave seed 7's text %q", a)
	}
}

// TestRunJSONError checks that a failing run prints an error event with
// the stage and numbers on stdout and exits 1.
func TestRunJSONError(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	m := shared.Path(t, "models/stories260K.gguf")
	out, _, code := runCmd(t, "", "run", "-m", m, "--json", "--ctx", "4", "Once upon a time")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Stage   string           `json:"stage"`
			Numbers map[string]int64 `json:"numbers"`
		} `json:"error"`
	}
	for _, l := range lines {
		if strings.Contains(l, `"type":"error"`) {
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if e.Type != "error" || e.Error.Stage != "encode" || e.Error.Numbers["tokens"] != 5 || e.Error.Numbers["ctx"] != 4 {
		t.Errorf("error event %+v in %q", e, out)
	}
}

// TestRunDraft: run --draft gives the text run alone gives (greedy and
// seeded sampling), says how the speculation went, and refuses a draft of
// another vocabulary at load and proposals out of range.
func TestRunDraft(t *testing.T) {
	m, d := shared.Path(t, "models/tiny-llama-Q8_0.gguf"), shared.Path(t, "models/tiny-llama-Q4_0.gguf")
	for _, args := range [][]string{{"--temp", "0"}, {"--temp", "0.8", "--seed", "7"}} {
		base := append([]string{"run", "-m", m, "-n", "48", "--no-journal"}, args...)
		want, errs, code := runCmd(t, "", append(base, "Once upon a time")...)
		if code != 0 || want == "" {
			t.Fatalf("run: exit %d, %s", code, errs)
		}
		got, errs, code := runCmd(t, "", append(base, "--draft", d, "--draft-max", "4", "--verbose", "Once upon a time")...)
		if code != 0 || got != want || !strings.Contains(errs, "drafted tokens kept") {
			t.Errorf("run %v --draft: exit %d, %q, want %q; stderr %s", args, code, got, want, errs)
		}
	}
	// The plan counts the draft: a budget the model alone fits refuses the
	// pair before anything is loaded.
	_, errs, _ := runCmd(t, "", "run", "-m", m, "-n", "4", "--no-journal", "--mem-budget", "1", "hi")
	need := regexp.MustCompile(`needs ([0-9.]+) MiB`).FindStringSubmatch(errs)
	if need == nil {
		t.Fatalf("no plan figure in %q", errs)
	}
	mib, _ := strconv.ParseFloat(need[1], 64)
	budget := strconv.FormatFloat(mib+1, 'f', 1, 64) + "MiB"
	if _, errs, code := runCmd(t, "", "run", "-m", m, "-n", "4", "--no-journal", "--mem-budget", budget, "hi"); code != 0 {
		t.Errorf("the model alone within %s: exit %d, %s", budget, code, errs)
	}
	if _, errs, code := runCmd(t, "", "run", "-m", m, "-n", "4", "--no-journal", "--mem-budget", budget, "--draft", d, "hi"); code == 0 ||
		!strings.Contains(errs, "glassbox run: plan: needs") || !strings.Contains(errs, "over the memory budget of "+strings.TrimSuffix(budget, "MiB")) {
		t.Errorf("the pair within %s: exit %d, %q", budget, code, errs)
	}
	// An interactive chat drafts too, turn after turn: the same replies.
	chat := []string{"run", "-m", m, "--temp", "0", "-n", "10", "--ctx", "256", "--no-journal", "-i"}
	plainChat, _, _ := runCmd(t, "Hello there\nTell me a story\n", chat...)
	drafted, errs, code := runCmd(t, "Hello there\nTell me a story\n", append(chat, "--draft", d)...)
	if code != 0 || drafted != plainChat || strings.Count(plainChat, ">>> ") != 3 {
		t.Errorf("interactive with a draft: exit %d, %q, want %q; %s", code, drafted, plainChat, errs)
	}
	other := shared.WithToken(t, m, "other", 7, "<glass>")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--draft", other}, "glassbox run: load: the draft model's token 7 is"},
		{[]string{"--draft", d, "--draft-max", "0"}, "--draft-max: generate: 0 proposals per step is out of range"},
		{[]string{"--draft", "nowhere.gguf"}, `load: --draft: model "nowhere.gguf": no such file`},
	} {
		_, errs, code := runCmd(t, "", append(append([]string{"run", "-m", m, "-n", "4", "--no-journal"}, tc.args...), "hi")...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q, want %q", tc.args, code, errs, tc.want)
		}
	}
}
