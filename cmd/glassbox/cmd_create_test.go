package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/store"
)

// TestCreateCommand: glassbox create makes a store model whose parameters
// and system message run applies where its own flags do not.
func TestCreateCommand(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	src := shared.Path(t, "models/stories260K.gguf")
	if _, errs, code := runCmd(t, "", "import", src, "stories"); code != 0 {
		t.Fatal(errs)
	}
	mf := filepath.Join(t.TempDir(), "Modelfile")
	if err := os.WriteFile(mf, []byte("FROM stories\nPARAMETER temperature 0\nPARAMETER num_predict 12\nPARAMETER stop dragon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"create", "greedy", "-f", mf}, 0, "created greedy from stories"},
		{[]string{"create", "hot", "--from", "greedy", "--param", "temperature=1.5", "--system", "Tell tales."}, 0, "created hot from greedy"},
		{[]string{"create", "bad", "--from", "stories", "--param", "temperature=hot"}, 1, "parameters.temperature must be a number"},
		{[]string{"create", "bad", "--from", "nowhere"}, 1, "not a store model"},
		{[]string{"create", "greedy", "--from", "stories"}, 1, "already exists"},
		{[]string{"create", "x"}, 2, "either -f Modelfile or --from MODEL"},
		{[]string{"list"}, 0, "greedy"},
		{[]string{"run", "-m", "llama3.2:1b", "--no-pull", "hi"}, 1, "'glassbox pull llama3.2:1b' downloads it"},
		{[]string{"show", "-m", "hot"}, 0, "made from              greedy"},
		{[]string{"show", "-m", "hot"}, 0, `system message         "Tell tales."`},
		{[]string{"show", "-m", "hot"}, 0, "parameter              temperature 1.5"},
		{[]string{"show", "-m", "hot", "--json"}, 0, `"from": "greedy"`},
		{[]string{"cp", "hot", "hot2"}, 0, "created hot2 from hot"},
		{[]string{"show", "-m", "hot2"}, 0, `system message         "Tell tales."`},
		{[]string{"cp", "hot", "hot2"}, 1, "already exists"},
		{[]string{"cp", "hot"}, 2, "Usage: glassbox cp SRC DST"},
	} {
		out, errs, code := runCmd(t, "", st.args...)
		if got := out + errs; code != st.code || !strings.Contains(got, st.out) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", st.args, code, out, errs, st.code, st.out)
		}
	}
	// greedy is greedy for 12 tokens: the base model's text with those flags.
	want, errs, code := runCmd(t, "", "run", "-m", "stories", "--temp", "0", "-n", "12", "--no-journal", "Once upon a time")
	if code != 0 {
		t.Fatal(errs)
	}
	got, errs, code := runCmd(t, "", "run", "-m", "greedy", "--no-journal", "Once upon a time")
	if code != 0 || got != want || want == "" {
		t.Errorf("run -m greedy: %q (%s), want the base's greedy %q", got, errs, want)
	}
	// A flag of the command line wins over the made model's parameter.
	longer, _, _ := runCmd(t, "", "run", "-m", "greedy", "-n", "20", "--no-journal", "Once upon a time")
	if !strings.HasPrefix(longer, strings.TrimRight(want, " ")) || len(longer) <= len(want) {
		t.Errorf("-n 20 over num_predict 12: %q, want more than %q", longer, want)
	}
	// hot keeps greedy's stop and length, with its own temperature and
	// system message.
	s, err := store.Default()
	if err != nil {
		t.Fatal(err)
	}
	hot, err := s.Get("hot")
	if err != nil || hot.System != "Tell tales." || hot.Parameters["temperature"] != 1.5 || hot.Parameters["num_predict"] != 12.0 ||
		hot.From != "greedy" || fmt.Sprint(hot.Parameters["stop"]) != "[dragon]" {
		t.Errorf("hot: %+v, %v", hot, err)
	}
}

// TestPullOllamaRegistry: a name of Ollama's registry pulls the model's
// GGUF layer and its parameters and system message, which run and serve
// then apply; a parameter no request could set is reported, not kept.
func TestPullOllamaRegistry(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	params := []byte(`{"temperature": 0, "num_predict": 7, "mirostat": 1}`)
	layers := []shared.Layer{{MediaType: "application/vnd.ollama.image.model", Data: data},
		{MediaType: "application/vnd.ollama.image.params", Data: params},
		{MediaType: "application/vnd.ollama.image.system", Data: []byte("Be brief.")}}
	reg := shared.OllamaRegistry(t, map[string][]shared.Layer{"library/stories:latest": layers, "library/stories:q8": layers})
	t.Setenv("GLASSBOX_OLLAMA_REGISTRY", reg.URL)
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	out, errs, code := runCmd(t, "", "pull", "stories")
	if code != 0 || !strings.Contains(out, "pulled stories:latest (1.1 MiB") || !strings.Contains(errs, "mirostat 1 is not kept") {
		t.Fatalf("pull: exit %d, %q, %q", code, out, errs)
	}
	// The registry's parameters make run greedy for 7 tokens.
	want, _, _ := runCmd(t, "", "run", "-m", src, "--temp", "0", "-n", "7", "--no-journal", "Once upon a time")
	got, errs, code := runCmd(t, "", "run", "-m", "stories", "--no-journal", "Once upon a time")
	if code != 0 || got != want || want == "" {
		t.Errorf("run -m stories: %q (%s), want %q", got, errs, want)
	}

	base := startServe(t)
	t.Setenv("GLASSBOX_OLLAMA_REGISTRY", reg.URL) // startServe set the home; the registry stays
	code, b := postBody(t, base+"/api/pull", `{"model": "stories:q8", "stream": false}`)
	if code != 200 || !strings.Contains(string(b), `"model":"stories:q8"`) {
		t.Fatalf("/api/pull: %d %s", code, b)
	}
	code, b = postBody(t, base+"/api/show", `{"model": "stories:q8"}`)
	var show struct{ System, Parameters string }
	if json.Unmarshal(b, &show); code != 200 || show.System != "Be brief." || !strings.Contains(show.Parameters, "num_predict 7") || strings.Contains(show.Parameters, "mirostat") {
		t.Errorf("/api/show: %d %s", code, b)
	}
	code, b = postBody(t, base+"/api/generate", `{"model": "stories:q8", "prompt": "Once upon a time", "raw": true, "stream": false}`)
	var gen struct {
		Response  string `json:"response"`
		EvalCount int    `json:"eval_count"`
	}
	if json.Unmarshal(b, &gen); code != 200 || gen.EvalCount != 7 {
		t.Errorf("/api/generate with the registry's num_predict 7: %d %s", code, b)
	}
	// A model made from it and a copy of that share its weights in memory:
	// one resident model, whichever name the requests use.
	if code, b := postBody(t, base+"/api/create", `{"model": "brief", "from": "stories:q8", "parameters": {"num_predict": 3}, "stream": false}`); code != 200 {
		t.Fatalf("/api/create: %d %s", code, b)
	}
	if code, b := postBody(t, base+"/api/copy", `{"source": "brief", "destination": "brief2"}`); code != 200 {
		t.Fatalf("/api/copy: %d %s", code, b)
	}
	for _, m := range []string{"brief", "brief2"} {
		code, b = postBody(t, base+"/api/generate", `{"model": "`+m+`", "prompt": "Once upon a time", "raw": true, "stream": false}`)
		if json.Unmarshal(b, &gen); code != 200 || gen.EvalCount != 3 {
			t.Errorf("/api/generate %s with its num_predict 3: %d %s", m, code, b)
		}
	}
	// /api/tags names each made model's parent, as Ollama does.
	resp, err := http.Get(base + "/api/tags")
	if err != nil {
		t.Fatal(err)
	}
	var tags struct {
		Models []struct {
			Name    string
			Details struct {
				ParentModel string `json:"parent_model"`
			}
		}
	}
	json.NewDecoder(resp.Body).Decode(&tags)
	resp.Body.Close()
	parents := map[string]string{}
	for _, m := range tags.Models {
		parents[m.Name] = m.Details.ParentModel
	}
	if parents["brief"] != "stories:q8" || parents["brief2"] != "brief" || parents["stories:q8"] != "" {
		t.Errorf("/api/tags parents: %v", parents)
	}
	resp, err = http.Get(base + "/api/ps")
	if err != nil {
		t.Fatal(err)
	}
	var ps struct{ Models []struct{ Name string } }
	json.NewDecoder(resp.Body).Decode(&ps)
	resp.Body.Close()
	if len(ps.Models) != 1 || ps.Models[0].Name != "stories:q8" {
		t.Errorf("/api/ps after generating with stories:q8, brief and brief2: %+v; want stories:q8 alone", ps.Models)
	}
}

// TestRunPulls: run -m with a name of Ollama's registry the store lacks
// downloads nothing unasked: without a terminal it fails naming the
// store's nearest names and --pull, and the registry hears nothing; with
// --pull it pulls, saying which host it contacts first; --no-pull keeps
// the store's error; a name the registry lacks fails naming both.
func TestRunPulls(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	layers := []shared.Layer{{MediaType: "application/vnd.ollama.image.model", Data: data},
		{MediaType: "application/vnd.ollama.image.params", Data: []byte(`{"temperature": 0, "num_predict": 5}`)}}
	reg := shared.OllamaRegistry(t, map[string][]shared.Layer{"library/stories:q8": layers, "someone/stories:latest": layers})
	var asked atomic.Int64
	target, _ := url.Parse(reg.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		proxy.ServeHTTP(w, r)
	}))
	defer counting.Close()
	host := strings.TrimPrefix(counting.URL, "http://")
	t.Setenv("GLASSBOX_OLLAMA_REGISTRY", counting.URL)
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	want, _, _ := runCmd(t, "", "run", "-m", src, "--temp", "0", "-n", "5", "--no-journal", "Once upon a time")
	for _, tc := range []struct {
		model, name string
	}{{"stories:q8", "stories:q8"}, {"someone/stories", "someone-stories:latest"}} {
		_, errs, code := runCmd(t, "", "run", "-m", tc.model, "--no-pull", "--no-journal", "Once upon a time")
		if code == 0 || !strings.Contains(errs, "no such model in the store") {
			t.Errorf("run -m %s --no-pull: exit %d, %q", tc.model, code, errs)
		}
		before := asked.Load()
		_, errs, code = runCmd(t, "", "run", "-m", tc.model, "--no-journal", "Once upon a time")
		refuse := fmt.Sprintf("load: model %q is not in the store, and nothing is downloaded unasked", tc.model)
		if code != 1 || !strings.Contains(errs, refuse) || !strings.Contains(errs, "with --pull or 'glassbox pull "+tc.model+"'") || asked.Load() != before {
			t.Errorf("run -m %s (no terminal): exit %d, stderr %q, registry asked %d times; want a refusal, no request", tc.model, code, errs, asked.Load()-before)
		}
		got, errs, code := runCmd(t, "", "run", "-m", tc.model, "--pull", "--no-journal", "Once upon a time")
		say := fmt.Sprintf("glassbox run: %s is not in the store: pulling it from %s as %s\nglassbox run: contacting %s\n", tc.model, counting.URL, tc.name, host)
		if code != 0 || got != want || want == "" || !strings.Contains(errs, say) || !strings.Contains(errs, "glassbox run: pulled "+tc.name) {
			t.Errorf("run -m %s --pull: exit %d, %q, want %q; stderr %q", tc.model, code, got, want, errs)
		}
		got, errs, code = runCmd(t, "", "run", "-m", tc.model, "--no-journal", "Once upon a time")
		if code != 0 || got != want || strings.Contains(errs, "pull") {
			t.Errorf("run -m %s again: exit %d, %q; stderr %q", tc.model, code, got, errs)
		}
	}
	// A typo of a stored name: refused, with the name meant.
	_, errs, code := runCmd(t, "", "run", "-m", "stories:q9", "--no-journal", "Once upon a time")
	if code != 1 || !strings.Contains(errs, `model "stories:q9" is not in the store (nearest: stories:q8)`) {
		t.Errorf("run -m stories:q9: exit %d, %q", code, errs)
	}
	_, errs, code = runCmd(t, "", "run", "-m", "nothere", "--pull", "--no-journal", "Once upon a time")
	if code == 0 || !strings.Contains(errs, `load: model "nothere" is not in the store, and pulling it failed`) ||
		!strings.Contains(errs, "no model library/nothere:latest in the registry") {
		t.Errorf("run -m nothere --pull: exit %d, %q", code, errs)
	}
}

// TestServeCreateFromUpload: Ollama's CLI imports a local GGUF file by
// uploading it to /api/blobs and naming it in a create's files; the model
// then generates.
func TestServeCreateFromUpload(t *testing.T) {
	data, err := os.ReadFile(shared.Path(t, "models/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	digest := "sha256:" + store.HashString(data)
	base := startServe(t)
	resp, err := http.Post(base+"/api/blobs/"+digest, "application/octet-stream", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("upload: %d", resp.StatusCode)
	}
	req, _ := http.NewRequest("HEAD", base+"/api/blobs/"+digest, nil)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD after the upload: %v %v", resp, err)
	}
	code, b := postBody(t, base+"/api/create", `{"model": "uploaded", "files": {"stories260K.gguf": "`+digest+`"}, "parameters": {"num_predict": 5}, "stream": false}`)
	if code != 200 {
		t.Fatalf("create: %d %s", code, b)
	}
	code, b = postBody(t, base+"/api/generate", `{"model": "uploaded", "prompt": "Once upon a time", "raw": true, "stream": false, "options": {"temperature": 0}}`)
	var gen struct {
		Response  string `json:"response"`
		EvalCount int    `json:"eval_count"`
	}
	if json.Unmarshal(b, &gen); code != 200 || gen.EvalCount != 5 || gen.Response == "" {
		t.Errorf("generate with the uploaded model: %d %s", code, b)
	}
	if code, b := postBody(t, base+"/api/create", `{"model": "broken", "files": {"x.gguf": "sha256:`+strings.Repeat("0", 64)+`"}}`); code != 400 || !strings.Contains(string(b), "was not uploaded") {
		t.Errorf("create from a blob never uploaded: %d %s", code, b)
	}
	// The model holds the upload's bytes, not the blobs: the digest still
	// names them (the CLI asks before it uploads again), and removing every
	// model made from it leaves nothing of them on disk.
	s, err := store.Default()
	if err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(s.Dir, "blobs", "*")); len(left) != 0 {
		t.Errorf("blobs left after the create: %v", left)
	}
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("HEAD after the create: %v %v", resp, err)
	}
	if code, b := postBody(t, base+"/api/create", `{"model": "uploaded2", "files": {"stories260K.gguf": "`+digest+`"}, "stream": false}`); code != 200 {
		t.Errorf("second create from the digest: %d %s", code, b)
	}
	for _, m := range []string{"uploaded", "uploaded2"} {
		dreq, _ := http.NewRequest("DELETE", base+"/api/delete", strings.NewReader(`{"model": "`+m+`"}`))
		if resp, err := http.DefaultClient.Do(dreq); err != nil || resp.StatusCode != 200 {
			t.Fatalf("delete %s: %v %v", m, resp, err)
		}
	}
	var held []string
	filepath.WalkDir(s.Dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasSuffix(p, ".json") {
			held = append(held, p)
		}
		return nil
	})
	if len(held) != 0 {
		t.Errorf("files left in the store after removing every model: %v", held)
	}
}
