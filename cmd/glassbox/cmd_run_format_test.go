package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestRunFormatJSON: --format json makes the story model write a JSON
// object (cut by -n here: its start).
func TestRunFormatJSON(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	out, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "30", "--format", "json", "Once upon a time")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(strings.TrimSpace(out), `{ "`) {
		t.Errorf("output %q does not start a JSON object", out)
	}
	free, _, _ := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "30", "Once upon a time")
	if free == out {
		t.Error("--format json changed nothing")
	}
}

// TestRunThinking: with --chat, a reasoning model's thinking goes to
// stderr and stdout holds the answer only (none here: the R1-style
// template opened the block and 8 tokens do not close it); --json's result
// carries it apart.
func TestRunThinking(t *testing.T) {
	r1 := shared.WithChatTemplate(t, "models/stories260K.gguf", shared.R1Template, "r1")
	out, errOut, code := runCmd(t, "", "run", "-m", r1, "--chat", "--temp", "0", "-n", "8", "--no-journal", "Once upon a time")
	if code != 0 || out != "" || len(strings.TrimSpace(errOut)) < 8 {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the thinking on stderr only", code, out, errOut)
	}
	js, _, _ := runCmd(t, "", "run", "-m", r1, "--chat", "--temp", "0", "-n", "8", "--no-journal", "--json", "Once upon a time")
	var res struct{ Text, Thinking string }
	for line := range strings.Lines(js) {
		var ev struct {
			Type   string
			Result json.RawMessage
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == "result" {
			json.Unmarshal(ev.Result, &res)
		}
	}
	if res.Text != "" || res.Thinking != errOut {
		t.Errorf("--json result: text %q, thinking %q; want the thinking %q", res.Text, res.Thinking, errOut)
	}
}

// TestRunFormatSchema: --format @FILE makes the story model write a value
// of the schema, keys in its order; a keyword the constraint cannot
// enforce is refused before loading.
func TestRunFormatSchema(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	schema := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 20},
		"age": {"type": "integer", "minimum": 1, "maximum": 120}, "friends": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
		"happy": {"type": "boolean"}, "born": {"type": "string", "format": "date"}, "code": {"type": "string", "pattern": "^[A-Z]{2}\\d{3}$"},
		"score": {"type": "number", "exclusiveMinimum": 0, "maximum": 1}, "pair": {"type": "array", "prefixItems": [{"type": "boolean"}, {"type": "null"}], "items": false, "minItems": 2}},
		"required": ["name", "age", "friends", "happy", "born", "code", "score", "pair"]}`
	file := filepath.Join(t.TempDir(), "person.json")
	if err := os.WriteFile(file, []byte(schema), 0o644); err != nil {
		t.Fatal(err)
	}
	for seed := range 3 {
		out, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0.8", "--seed", strconv.Itoa(seed), "-n", "400", "--ctx", "512",
			"--format", "@"+file, "Once upon a time")
		if code != 0 {
			t.Fatalf("seed %d: exit %d: %s", seed, code, errOut)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		var v struct {
			Name    *string
			Age     *int
			Friends []string
			Happy   *bool
			Born    string
			Code    string
			Score   float64
			Pair    []any
		}
		if err := dec.Decode(&v); err != nil || v.Name == nil || v.Age == nil || v.Friends == nil || v.Happy == nil ||
			!regexp.MustCompile(`^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$`).MatchString(v.Born) || !regexp.MustCompile(`^[A-Z]{2}\d{3}$`).MatchString(v.Code) {
			t.Fatalf("seed %d: %q is not a value of the schema: %v %+v", seed, out, err, v)
		}
		order := []string{`"name"`, `"age"`, `"friends"`, `"happy"`}
		for i := 1; i < len(order); i++ {
			if strings.Index(out, order[i-1]) > strings.Index(out, order[i]) {
				t.Errorf("seed %d: %q: keys out of the schema's order", seed, out)
			}
		}
		if len([]rune(*v.Name)) > 20 || len(v.Friends) > 3 || *v.Age < 1 || *v.Age > 120 || v.Score <= 0 || v.Score > 1 ||
			len(v.Pair) != 2 || v.Pair[1] != nil {
			t.Errorf("seed %d: %q: over maxLength, maxItems or the age's bounds", seed, out)
		}
	}
	_, errOut, code := runCmd(t, "", "run", "-m", "/nonexistent.gguf", "--format", `{"type": "string", "pattern": "^a(?=b)"}`, "hi")
	if code == 0 || !strings.Contains(errOut, `lookarounds`) {
		t.Errorf("pattern: exit %d, %q; want the schema refused (before the missing model)", code, errOut)
	}
}

// TestRunLogprobs: --logprobs N prints each token's probability and N
// alternatives on stderr (stdout keeps only the text), and with --json
// puts them on the token events.
func TestRunLogprobs(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	out, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "8", "--logprobs", "3", "Once upon a time")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	plain, _, _ := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "8", "Once upon a time")
	if out != plain {
		t.Errorf("stdout %q, without --logprobs %q", out, plain)
	}
	rows := 0
	quoted := `"(?:[^"\\]|\\.)*"`
	row := regexp.MustCompile(`^\s*(\d+)\s+` + quoted + `\s+([0-9.]+)\s+((?:` + quoted + ` [0-9.]+(?:, )?)*)$`)
	for _, line := range strings.Split(errOut, "\n") {
		m := row.FindStringSubmatch(line)
		if m == nil || m[1] != strconv.Itoa(rows) {
			continue
		}
		if p, err := strconv.ParseFloat(m[2], 64); err != nil || p <= 0 || p > 1 || len(regexp.MustCompile(quoted).FindAllString(m[3], -1)) != 3 {
			t.Errorf("row %q: want a probability and three alternatives", line)
		}
		rows++
	}
	if rows != 8 {
		t.Errorf("%d rows for 8 tokens:\n%s", rows, errOut)
	}
	js, errOut, code := runCmd(t, "", "run", "-m", m, "--temp", "0", "-n", "4", "--logprobs", "0", "--json", "Once upon a time")
	if code != 0 {
		t.Fatalf("--json: exit %d: %s", code, errOut)
	}
	tokens := 0
	for _, line := range strings.Split(strings.TrimSpace(js), "\n") {
		var e struct {
			Type  string
			Token *struct {
				Logprob *struct {
					Logprob float64
					Top     []any
				}
			}
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Type != "token" {
			continue
		}
		tokens++
		if lp := e.Token.Logprob; lp == nil || lp.Logprob > 0 || len(lp.Top) != 0 {
			t.Errorf("token event %s: want a logprob ≤ 0 and no alternatives", line)
		}
	}
	if tokens != 4 {
		t.Errorf("%d token events, want 4", tokens)
	}
}
