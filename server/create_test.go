package server

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCreate: /api/create makes a model whose system message and
// parameters every API applies under a request's own.
func TestCreate(t *testing.T) {
	ts := start(t, newFake(), nil)
	last := ts.last
	var st ollamaPullStatus
	decode(t, ts.do("POST", "/api/create", map[string]any{"model": "mario", "from": "tiny", "system": "You are Mario.",
		"parameters": map[string]any{"temperature": 0.2, "stop": []string{"Luigi"}, "num_ctx": 64}, "stream": false}), 200, &st)
	if st.Status != "success" || st.Model != "mario" {
		t.Fatalf("create: %+v", st)
	}
	user := []map[string]any{{"role": "user", "content": "hi"}}
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		system     string
		temp       float32
	}{
		{"ollama chat", "/api/chat", map[string]any{"model": "mario", "messages": user, "stream": false}, "You are Mario.", 0.2},
		{"ollama chat, own options", "/api/chat", map[string]any{"model": "mario", "messages": user, "stream": false, "options": map[string]any{"temperature": 0.9}}, "You are Mario.", 0.9},
		{"ollama chat, own system", "/api/chat", map[string]any{"model": "mario", "messages": append([]map[string]any{{"role": "system", "content": "Be brief."}}, user...), "stream": false}, "Be brief.", 0.2},
		{"ollama generate", "/api/generate", map[string]any{"model": "mario", "prompt": "hi", "stream": false}, "You are Mario.", 0.2},
		{"ollama generate, own system", "/api/generate", map[string]any{"model": "mario", "prompt": "hi", "system": "Be brief.", "stream": false}, "Be brief.", 0.2},
		{"openai chat", "/v1/chat/completions", map[string]any{"model": "mario", "messages": user}, "You are Mario.", 0.2},
		{"openai chat, own temperature", "/v1/chat/completions", map[string]any{"model": "mario", "messages": user, "temperature": 1.5}, "You are Mario.", 1.5},
		{"native job", "/v1/jobs", map[string]any{"model": "mario", "messages": user}, "You are Mario.", 0.2},
	} {
		ts.f.mu.Lock()
		before := len(ts.f.requests)
		ts.f.mu.Unlock()
		resp := ts.do("POST", tc.path, tc.body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 && resp.StatusCode != 202 {
			t.Fatalf("%s: status %d", tc.name, resp.StatusCode)
		}
		for deadline := time.Now().Add(patience); ; time.Sleep(time.Millisecond) { // a job starts on its own
			ts.f.mu.Lock()
			n := len(ts.f.requests)
			ts.f.mu.Unlock()
			if n > before || time.Now().After(deadline) {
				break
			}
		}
		r := last()
		system := r.System
		if len(r.Messages) > 0 && r.Messages[0].Role == "system" {
			system = r.Messages[0].Content
		}
		if system != tc.system || r.Options.Temperature != tc.temp || !slices.Equal(r.Options.Stop, []string{"Luigi"}) || r.Options.NumCtx != 64 {
			t.Errorf("%s: system %q, temperature %v, stop %q, num_ctx %d; want %q, %v, [Luigi], 64", tc.name, system, r.Options.Temperature, r.Options.Stop, r.Options.NumCtx, tc.system, tc.temp)
		}
		if n := len(r.Messages); n > 0 && slices.ContainsFunc(r.Messages[1:], func(m Message) bool { return m.Role == "system" }) {
			t.Errorf("%s: a second system message in %+v", tc.name, r.Messages)
		}
	}
	// show tells what it was made with.
	var show ollamaShowResponse
	decode(t, ts.do("POST", "/api/show", map[string]any{"model": "mario"}), 200, &show)
	if show.System != "You are Mario." || !strings.Contains(show.Parameters, "temperature 0.2") || !strings.Contains(show.Parameters, "stop Luigi") ||
		!strings.Contains(show.Modelfile, "FROM tiny\n") || !strings.Contains(show.Modelfile, "PARAMETER num_ctx 64") {
		t.Errorf("show mario: system %q, parameters %q, modelfile %q", show.System, show.Parameters, show.Modelfile)
	}
	// The base model is as it was.
	decode(t, ts.do("POST", "/api/chat", map[string]any{"model": "tiny", "messages": user, "stream": false}), 200, nil)
	if r := last(); len(r.Messages) != 1 || r.Options.Temperature != 0.8 || len(r.Options.Stop) != 0 {
		t.Errorf("tiny after mario was made: %+v", r)
	}

	// The older API: a Modelfile; and the stream of statuses.
	resp := ts.do("POST", "/api/create", map[string]any{"model": "luigi", "modelfile": "# a comment\nFROM mario\nPARAMETER temperature 0.5\nPARAMETER stop A\nPARAMETER stop \"B C\"\nSYSTEM \"\"\"You are\nLuigi.\"\"\"\n"})
	lines := ndjson(t, resp)
	if len(lines) == 0 || lines[len(lines)-1]["status"] != "success" {
		t.Fatalf("streamed create: %v", lines)
	}
	p, _ := ts.f.Profile(t.Context(), "luigi")
	if p == nil || p.From != "mario" || p.System != "You are\nLuigi." || p.Parameters["temperature"] != 0.5 || !slices.Equal(p.Parameters["stop"].([]any), []any{"A", "B C"}) {
		t.Errorf("luigi's profile: %+v", p)
	}

	for _, tc := range []struct {
		body        map[string]any
		status      int
		want, stage string
	}{
		{map[string]any{"model": "x", "system": "s"}, 400, "from (the model to make it from) or files (an uploaded GGUF file) is required", "deliver"},
		{map[string]any{"from": "tiny"}, 400, "model is required", "deliver"},
		{map[string]any{"model": "x", "from": "tiny", "template": "{{ .Prompt }}"}, 400, "TEMPLATE is a Go template", "deliver"},
		{map[string]any{"model": "x", "from": "tiny", "quantize": "q4_K_M"}, 400, "glassbox quantize", "deliver"},
		{map[string]any{"model": "x", "from": "tiny", "files": map[string]string{"m.gguf": "sha256:00"}}, 400, "from and files both name the weights", "deliver"},
		{map[string]any{"model": "x", "files": map[string]string{"model.safetensors": "sha256:00"}}, 400, "one GGUF file is what glassbox imports", "deliver"},
		{map[string]any{"model": "x", "files": map[string]string{"m.gguf": "sha256:00"}}, 400, "was not uploaded", "load"},
		{map[string]any{"model": "x", "from": "tiny", "parameters": map[string]any{"temperature": "hot"}}, 400, "parameters.temperature", "deliver"},
		{map[string]any{"model": "x", "from": "tiny", "parameters": map[string]any{"mirostat": 2}}, 400, "parameters.mirostat", "deliver"},
		{map[string]any{"model": "x", "modelfile": "FROM tiny\nADAPTER lora.gguf"}, 400, "line 2: ADAPTER (LoRA) is not supported", "deliver"},
		{map[string]any{"model": "x", "modelfile": "FROM tiny\nSYSTEM \"\"\"open"}, 400, `line 2: a """ value is not closed`, "deliver"},
		{map[string]any{"model": "x", "modelfile": "PARAMETER temperature 1"}, 400, "no FROM line", "deliver"},
		{map[string]any{"model": "x", "from": "nope"}, 404, `model "nope"`, "load"},
		{map[string]any{"model": "tiny", "from": "other"}, 400, "already exists", "load"},
	} {
		var e struct {
			Error string `json:"error"`
		}
		decode(t, ts.do("POST", "/api/create", tc.body), tc.status, &e)
		if !strings.Contains(e.Error, tc.want) || !strings.HasPrefix(e.Error, tc.stage+": ") {
			t.Errorf("create %v: %q, want %q in stage %s", tc.body, e.Error, tc.want, tc.stage)
		}
	}
}

// TestBlobs: /api/blobs holds uploads by digest (Ollama's CLI sends a
// local GGUF file there before its create names it in files).
func TestBlobs(t *testing.T) {
	ts := start(t, newFake(), nil)
	data := []byte("GGUF pretend")
	sum := sha256.Sum256(data)
	digest := "sha256:" + hex.EncodeToString(sum[:])
	status := func(method, body string) int {
		t.Helper()
		resp := ts.do(method, "/api/blobs/"+digest, body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := status("HEAD", ""); got != 404 {
		t.Errorf("HEAD before the upload: %d", got)
	}
	if got := status("POST", "other bytes"); got != 400 {
		t.Errorf("an upload of other bytes: %d", got)
	}
	if got := status("POST", string(data)); got != 201 {
		t.Errorf("the upload: %d", got)
	}
	if got := status("HEAD", ""); got != 200 {
		t.Errorf("HEAD after the upload: %d", got)
	}
	var st ollamaPullStatus
	decode(t, ts.do("POST", "/api/create", map[string]any{"model": "local", "files": map[string]string{"m.gguf": digest}, "system": "Hi.", "stream": false}), 200, &st)
	if p, _ := ts.f.Profile(t.Context(), "local"); st.Status != "success" || p == nil || p.System != "Hi." {
		t.Errorf("create from the blob: %+v, profile %+v", st, p)
	}
}

func TestParseModelfile(t *testing.T) {
	for _, tc := range []struct {
		text string
		want ModelProfile
		err  string
	}{
		{"FROM base\n", ModelProfile{From: "base"}, ""},
		{"from base\nparameter num_ctx 4096\nparameter top_p 0.5\nparameter penalize_newline true\n", ModelProfile{From: "base", Parameters: map[string]any{"num_ctx": 4096.0, "top_p": 0.5, "penalize_newline": true}}, ""},
		{"FROM base\nSYSTEM You are a pirate.\nLICENSE MIT\nLICENSE \"\"\"and\nmore\"\"\"\n", ModelProfile{From: "base", System: "You are a pirate.", License: "MIT\n\nand\nmore"}, ""},
		{"FROM base\nSYSTEM \"\"\"one line\"\"\"\n", ModelProfile{From: "base", System: "one line"}, ""},
		{"FROM base\nPARAMETER stop <|im_end|>\nPARAMETER stop \"</s>\"\n", ModelProfile{From: "base", Parameters: map[string]any{"stop": []any{"<|im_end|>", "</s>"}}}, ""},
		{"FROM base\nPARAMETER temperature\n", ModelProfile{}, "line 2: PARAMETER needs a name and a value"},
		{"FROM base\nTEMPLATE {{ .Prompt }}\n", ModelProfile{}, "line 2: TEMPLATE is a Go template"},
		{"FROM base\nMESSAGE user hi\n", ModelProfile{}, "line 2: MESSAGE is not supported"},
		{"FROM base\nSYSTEM \"\"\"a\nb\"\"\" extra\n", ModelProfile{}, `line 3: text after a closing """`},
		{"FROM base\nWHAT now\n", ModelProfile{}, `line 2: unknown instruction "WHAT"`},
		{"FROM base\nPARAMETER temprature 0.2\n", ModelProfile{}, `line 2: unknown parameter "temprature" (did you mean temperature?)`},
		{"FROM base\nPARAMETER num_gpu 1\nPARAMETER use_mmap false\n", ModelProfile{From: "base", Parameters: map[string]any{"num_gpu": 1.0, "use_mmap": false}}, ""},
	} {
		got, e := ParseModelfile(tc.text)
		switch {
		case tc.err != "":
			if e == nil || !strings.Contains(e.Message, tc.err) || e.Status != http.StatusBadRequest {
				t.Errorf("ParseModelfile(%q) = %+v, %v; want an error with %q", tc.text, got, e, tc.err)
			}
		case e != nil:
			t.Errorf("ParseModelfile(%q): %v", tc.text, e)
		case got.From != tc.want.From || got.System != tc.want.System || got.License != tc.want.License || !equalParams(got.Parameters, tc.want.Parameters):
			t.Errorf("ParseModelfile(%q) = %+v, want %+v", tc.text, got.ModelProfile, tc.want)
		}
	}
	// A profile renders back to a Modelfile that parses to it.
	p := ModelProfile{From: "base", System: "Be\nbrief.", Parameters: map[string]any{"temperature": 0.5, "stop": []any{"a", "b"}}, License: "MIT"}
	back, e := ParseModelfile(p.Modelfile("x"))
	if e != nil || back.From != p.From || back.System != p.System || back.License != p.License || !equalParams(back.Parameters, p.Parameters) {
		t.Errorf("round trip of %+v: %+v, %v\n%s", p, back, e, p.Modelfile("x"))
	}
}

func equalParams(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok {
			return false
		}
		if vs, ok := v.([]any); ok {
			ws, ok := w.([]any)
			if !ok || !slices.Equal(vs, ws) {
				return false
			}
			continue
		}
		if v != w {
			return false
		}
	}
	return true
}

// FuzzParseModelfile: no text panics the parser; what it accepts has a
// FROM, and a profile without triple quotes or line breaks in its values
// reads back from the Modelfile it renders.
func FuzzParseModelfile(f *testing.F) {
	for _, s := range []string{"FROM base\nSYSTEM \"\"\"a\nb\"\"\"\nPARAMETER stop x\n", "FROM m\nPARAMETER temperature 0.5\nLICENSE MIT", "# c\nfrom x\n\"\"\"", "FROM \"\"\"\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		req, e := ParseModelfile(text)
		if e != nil {
			return
		}
		if req.From == "" {
			t.Fatalf("%q: accepted without a FROM", text)
		}
		p := req.ModelProfile
		clean := func(s string) bool { // what a Modelfile value can hold
			return !strings.Contains(s, `"""`) && !strings.HasSuffix(s, `"`) && !strings.ContainsAny(s, "\r")
		}
		if !clean(p.From) || !clean(p.System) || !clean(p.License) || p.System == "" {
			return
		}
		back, e := ParseModelfile(p.Modelfile("x"))
		if e != nil || back.System != p.System || back.From != p.From {
			t.Fatalf("%q: %+v renders to a Modelfile that reads as %+v, %v", text, p, back, e)
		}
	})
}
