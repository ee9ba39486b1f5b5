package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/jpeg"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/diffusion"
)

// startComfyInput is startImages with the input folder in a temporary
// folder (returned) and a body limit of limit bytes (0: the default).
func startComfyInput(t *testing.T, f *imageFake, limit int64) (*testServer, string) {
	dir := filepath.Join(t.TempDir(), "input")
	return start(t, f.fakeBackend, func(c *Config) {
		c.Backend, c.InputDir = f, dir
		if limit > 0 {
			c.MaxBodyBytes = limit
		}
	}), dir
}

// uploadForm is a multipart body with data as field "image" named name
// (sent as is: the Content-Disposition is written by hand, so hostile names
// reach the server unchanged) and the other fields.
func uploadForm(t *testing.T, name string, data []byte, fields map[string]string) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="image"; filename="%s"`, strings.ReplaceAll(name, `"`, `\"`)))
	h.Set("Content-Type", "application/octet-stream")
	pw, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	pw.Write(data)
	for k, v := range fields {
		mw.WriteField(k, v)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func (ts *testServer) upload(path, name string, data []byte, fields map[string]string) (int, []byte) {
	ts.t.Helper()
	body, ct := uploadForm(ts.t, name, data, fields)
	req, _ := http.NewRequest("POST", ts.url+path, body)
	req.Header.Set("Content-Type", ct)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func jpegOf(t *testing.T, w, h int) []byte {
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestComfyUIUpload: POST /upload/image keeps PNGs and JPEGs in the input
// folder and answers ComfyUI's {"name", "subfolder", "type"}; GET /view
// with type=input serves them back; a taken name gets a number unless
// overwrite is set.
func TestComfyUIUpload(t *testing.T) {
	f := newImageFake(t)
	ts, dir := startComfyInput(t, f, 0)
	pic := grey(64, 64, 40)
	for _, tc := range []struct {
		name, path, file string
		data             []byte
		fields           map[string]string
		want             map[string]string
	}{
		{"png", "/upload/image", "fox.png", pic, nil, map[string]string{"name": "fox.png", "subfolder": "", "type": "input"}},
		{"taken name numbered", "/api/upload/image", "fox.png", pic, map[string]string{"type": "input"},
			map[string]string{"name": "fox (1).png", "subfolder": "", "type": "input"}},
		{"overwrite", "/upload/image", "fox.png", pic, map[string]string{"overwrite": "true"},
			map[string]string{"name": "fox.png", "subfolder": "", "type": "input"}},
		{"jpeg in a subfolder", "/upload/image", "cat.jpg", jpegOf(t, 32, 16), map[string]string{"subfolder": "pets/2026"},
			map[string]string{"name": "cat.jpg", "subfolder": "pets/2026", "type": "input"}},
		// A client's directory part is dropped (RFC 7578 4.2), as ComfyUI does.
		{"directory in the file name", "/upload/image", "../../../tmp/owl.png", pic, nil,
			map[string]string{"name": "owl.png", "subfolder": "", "type": "input"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.upload(tc.path, tc.file, tc.data, tc.fields)
			var got map[string]string
			json.Unmarshal(b, &got)
			if st != 200 || fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("%d %s, want %v", st, b, tc.want)
			}
			on, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(tc.want["subfolder"]), tc.want["name"]))
			if err != nil || !bytes.Equal(on, tc.data) {
				t.Fatalf("the file on disk: %d bytes, %v", len(on), err)
			}
			q := "/view?type=input&filename=" + tc.want["name"] + "&subfolder=" + tc.want["subfolder"]
			resp := ts.do("GET", strings.ReplaceAll(q, " ", "%20"), nil)
			served, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Equal(served, tc.data) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "image/") {
				t.Errorf("GET %s: %d %s, %d bytes", q, resp.StatusCode, resp.Header.Get("Content-Type"), len(served))
			}
		})
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 { // fox, fox (1), owl, pets
		t.Errorf("the input folder holds %d entries", len(ents))
	}
	// LoadImage's choices are the pictures at the folder's top.
	var info map[string]map[string]any
	decode(t, ts.do("GET", "/object_info/LoadImage", nil), 200, &info)
	choices := info["LoadImage"]["input"].(map[string]any)["required"].(map[string]any)["image"].([]any)[0]
	if fmt.Sprint(choices) != "[fox (1).png fox.png owl.png]" {
		t.Errorf("LoadImage's choices %v", choices)
	}
}

// TestComfyUIUploadRefused: names that would leave the input folder, a
// body over the limit and files that are not pictures are refused, each
// with the reason, and nothing is written.
func TestComfyUIUploadRefused(t *testing.T) {
	f := newImageFake(t)
	ts, dir := startComfyInput(t, f, 64<<10)
	outside := t.TempDir()
	os.MkdirAll(dir, 0o700)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	pic := grey(64, 64, 1)
	big := make([]byte, 80<<10)
	copy(big, pic)
	for _, tc := range []struct {
		name   string
		file   string
		data   []byte
		fields map[string]string
		status int
		want   string
	}{
		{"dot-dot file name", "..", pic, nil, 400, `".." would leave the input folder`},
		{"root as file name", "/", pic, nil, 400, "slash"},
		{"dot-dot subfolder", "a.png", pic, map[string]string{"subfolder": "../escape"}, 400, "would leave the input folder"},
		{"dot-dot inside subfolder", "a.png", pic, map[string]string{"subfolder": "x/../../escape"}, 400, "would leave the input folder"},
		{"absolute subfolder", "a.png", pic, map[string]string{"subfolder": "/etc"}, 400, "absolute path"},
		{"backslash subfolder", "a.png", pic, map[string]string{"subfolder": `a\..\..\x`}, 400, "backslash"},
		{"symlink out", "a.png", pic, map[string]string{"subfolder": "link"}, 400, "leads out of the input folder"},
		{"hidden name", ".upload-1234", pic, nil, 400, "begin with a dot"},
		{"control character", "a.png", pic, map[string]string{"subfolder": "a\x01b"}, 400, "control character"},
		{"type temp", "a.png", pic, map[string]string{"type": "temp"}, 400, `type "temp"`},
		{"oversize", "big.png", big, nil, 413, "limit of 65536 bytes"},
		{"gif", "a.gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), nil, 400, "not a PNG or JPEG: it begins 47 49 46 38 39 61"},
		{"text", "a.png", []byte("hello, world"), nil, 400, "not a PNG or JPEG"},
		{"broken png", "a.png", pic[:20], nil, 400, "broken png header"},
		{"empty", "a.png", nil, nil, 400, "not a PNG or JPEG"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, b := ts.upload("/upload/image", tc.file, tc.data, tc.fields)
			var e nativeError
			json.Unmarshal(b, &e)
			if st != tc.status || !strings.Contains(e.Error.Message, tc.want) || e.Error.Stage != "deliver" {
				t.Errorf("%d %s, want %d with %q", st, b, tc.status, tc.want)
			}
		})
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("%d files were written outside the input folder", len(ents))
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the input folder holds %d entries, want the symlink only", len(ents))
	}
	// /view is confined the same way.
	os.WriteFile(filepath.Join(outside, "secret.png"), pic, 0o600)
	for _, q := range []string{"filename=secret.png&subfolder=link", "filename=../secret.png", "filename=secret.png&subfolder=..",
		"filename=" + filepath.Join(outside, "secret.png"), "filename=nothere.png"} {
		resp := ts.do("GET", "/view?type=input&"+q, nil)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || bytes.Equal(b, pic) {
			t.Errorf("GET /view?%s: %d, %d bytes", q, resp.StatusCode, len(b))
		}
	}
}

// FuzzInputPath: whatever the subfolder and name, inputPath accepts only a
// path that stays inside the folder, and never panics.
func FuzzInputPath(f *testing.F) {
	for _, s := range [][2]string{{"", "a.png"}, {"", ".."}, {"..", "a.png"}, {"a/../..", "b.png"}, {"/etc", "passwd"},
		{"", "/"}, {"a//b", "c"}, {"", "a\x00b"}, {`..\..`, "x"}, {"", "\xff\xfe"}, {"C:", "x.png"}, {"", strings.Repeat("a", 300)},
		{"a/b/c/d/e/f/g/h/i", "x"}, {" ", " "}, {"", ".hidden"}, {"sub", "con.png"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, sub, name string) {
		p, e := inputPath("test", sub, name)
		if e != nil {
			if e.Status != 400 || e.Message == "" {
				t.Errorf("inputPath(%q, %q): %+v", sub, name, e)
			}
			return
		}
		if !filepath.IsLocal(p) || filepath.Clean(p) != p || strings.Contains(p, "\\") || strings.HasPrefix(filepath.Base(p), ".") {
			t.Errorf("inputPath(%q, %q) = %q", sub, name, p)
		}
	})
}

// comfyImg2Img is comfyDefault with its latent a VAEEncode (node 11) of
// a LoadImage (node 10) of picture, at denoise.
func comfyImg2Img(picture string, denoise float64) map[string]any {
	g := comfyDefault("sd", "euler")
	g["10"] = map[string]any{"class_type": "LoadImage", "inputs": map[string]any{"image": picture, "upload": "image"}}
	g["11"] = map[string]any{"class_type": "VAEEncode", "inputs": map[string]any{"pixels": []any{"10", 0}, "vae": []any{"4", 2}}}
	ks := g["3"].(map[string]any)["inputs"].(map[string]any)
	ks["latent_image"], ks["denoise"] = []any{"11", 0}, denoise
	delete(g, "5")
	return g
}

// comfyAdvanced is g with its KSampler (node 3) a KSamplerAdvanced of
// steps steps from start to end.
func comfyAdvanced(g map[string]any, addNoise string, steps, start, end int) map[string]any {
	ks := g["3"].(map[string]any)["inputs"].(map[string]any)
	in := map[string]any{"add_noise": addNoise, "noise_seed": ks["seed"], "steps": steps, "start_at_step": start, "end_at_step": end,
		"return_with_leftover_noise": "disable"}
	for _, k := range []string{"cfg", "latent_image", "model", "negative", "positive", "sampler_name", "scheduler"} {
		in[k] = ks[k]
	}
	g["3"] = map[string]any{"class_type": "KSamplerAdvanced", "inputs": in}
	return g
}

// node returns g's node id's inputs, to change one.
func node(g map[string]any, id string) map[string]any {
	return g[id].(map[string]any)["inputs"].(map[string]any)
}

// TestComfyUIImg2Img: LoadImage → VAEEncode → KSampler (denoise < 1) or
// KSamplerAdvanced (start_at_step > 0) is an img2img job with the uploaded
// picture as its init image.
func TestComfyUIImg2Img(t *testing.T) {
	f := newImageFake(t)
	ts, _ := startComfyInput(t, f, 0)
	pic := grey(64, 128, 70)
	if st, b := ts.upload("/upload/image", "start.png", pic, map[string]string{"subfolder": "mine"}); st != 200 {
		t.Fatalf("upload: %d %s", st, b)
	}
	for _, tc := range []struct {
		name     string
		graph    map[string]any
		strength float32
		steps    int
		txt2img  bool
	}{
		// ComfyUI's: 3 steps at denoise 0.6 are the last 3 of int(3/0.6) = 5.
		{"KSampler denoise 0.6", comfyImg2Img("mine/start.png", 0.6), 2.5 / 5, 5, false},
		{"KSampler denoise 1", comfyImg2Img("mine/start.png", 1), 1, 3, false},
		{"annotated name", comfyImg2Img("mine/start.png [input]", 0.25), 2.5 / 12, 12, false},
		{"KSamplerAdvanced start 8 of 20", comfyAdvanced(comfyImg2Img("mine/start.png", 1), "enable", 20, 8, 10000), 11.5 / 20, 20, false},
		{"KSamplerAdvanced start 0", comfyAdvanced(comfyImg2Img("mine/start.png", 1), "enable", 4, 0, 4), 1, 4, false},
		{"KSamplerAdvanced txt2img", comfyAdvanced(comfyDefault("sd", "euler"), "enable", 5, 0, 10000), 0, 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var created struct {
				PromptID string `json:"prompt_id"`
			}
			decode(t, ts.do("POST", "/prompt", map[string]any{"prompt": tc.graph}), 200, &created)
			var hist map[string]comfyEntry
			waitFor(t, "the prompt in the history", func() bool {
				decode(t, ts.do("GET", "/history/"+created.PromptID, nil), 200, &hist)
				return len(hist) == 1
			})
			if e := hist[created.PromptID]; e.Status.StatusStr != "success" {
				t.Fatalf("history %+v", e)
			}
			f.mu.Lock()
			r := f.reqs[len(f.reqs)-1]
			f.mu.Unlock()
			if r.Prompt != "a fox in snow" || r.Model != "sd" || r.Steps != tc.steps || r.Strength != tc.strength || r.N != 1 || r.RNG != "cpu" {
				t.Errorf("the job ran %+v", r)
			}
			if tc.txt2img {
				if r.InitImage != nil || r.Width != 128 || r.Height != 64 {
					t.Errorf("txt2img ran %dx%d with %d bytes of init image", r.Width, r.Height, len(r.InitImage))
				}
			} else if !bytes.Equal(r.InitImage, pic) || r.InitBytes != len(pic) || r.Width != 0 || r.Height != 0 {
				t.Errorf("img2img ran %dx%d with %d bytes of init image (want the %d uploaded, its own size)", r.Width, r.Height, len(r.InitImage), len(pic))
			}
		})
	}
	// start_at_step s of n is where the engine's img2img starts.
	for _, c := range [][2]int{{20, 8}, {20, 1}, {20, 19}, {7, 3}, {1000, 999}, {3, 1}} {
		n, s := c[0], c[1]
		sig := make([]float32, n+1)
		start, err := diffusion.StartAt(sig, (float32(n)-float32(s)-0.5)/float32(n))
		if err != nil || start != s {
			t.Errorf("start_at_step %d of %d: the engine starts at %d (%v)", s, n, start, err)
		}
	}
}

// TestComfyUIGraphRefused: bad links (to a missing node, to an output the
// node lacks, of the wrong type, malformed or missing), LoadImage names
// that are not pictures in the input folder, and KSampler(Advanced)
// settings glassbox cannot run are a 400 with node_errors naming the node
// and the input, and no job.
func TestComfyUIGraphRefused(t *testing.T) {
	f := newImageFake(t)
	ts, dir := startComfyInput(t, f, 0)
	if st, b := ts.upload("/upload/image", "start.png", grey(64, 64, 3), nil); st != 200 {
		t.Fatalf("upload: %d %s", st, b)
	}
	os.WriteFile(filepath.Join(dir, "notes.png"), []byte("not a picture"), 0o600)
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.png"), grey(64, 64, 9), 0o600)
	os.Symlink(outside, filepath.Join(dir, "out"))
	ok := func() map[string]any { return comfyImg2Img("start.png", 0.6) }
	with := func(g map[string]any, id, input string, v any) map[string]any {
		if v == nil {
			delete(node(g, id), input)
		} else {
			node(g, id)[input] = v
		}
		return g
	}
	twoCkpts := ok()
	twoCkpts["12"] = map[string]any{"class_type": "CheckpointLoaderSimple", "inputs": map[string]any{"ckpt_name": "other"}}
	with(twoCkpts, "8", "vae", []any{"12", 2})
	for _, tc := range []struct {
		name        string
		graph       map[string]any
		node, input string
		typ, want   string
	}{
		{"missing node", with(ok(), "3", "model", []any{"99", 0}), "3", "model", "bad_linked_input", `node "99" does not exist`},
		{"no such output", with(ok(), "3", "positive", []any{"6", 3}), "3", "positive", "bad_linked_input", `node "6" (CLIPTextEncode) has no output 3: its outputs are [0 CONDITIONING]`},
		{"wrong output type", with(ok(), "3", "model", []any{"4", 1}), "3", "model", "return_type_mismatch", "output 1 is CLIP, want MODEL"},
		{"wrong class", with(ok(), "11", "pixels", []any{"8", 0}), "11", "pixels", "return_type_mismatch", `node "8" is a VAEDecode, not a LoadImage`},
		{"negative slot", with(ok(), "8", "vae", []any{"4", -1}), "8", "vae", "bad_linked_input", "not an output slot"},
		{"not a link", with(ok(), "8", "vae", "4"), "8", "vae", "bad_linked_input", "not a link [node, output]"},
		{"numeric node id", with(ok(), "8", "vae", []any{4, 2}), "8", "vae", "bad_linked_input", "not a string id"},
		{"missing input", with(ok(), "11", "vae", nil), "11", "vae", "required_input_missing", "VAE"},
		{"no such picture", with(ok(), "10", "image", "gone.png"), "10", "image", "value_not_valid", `"gone.png" is not in the input folder`},
		{"picture out of the folder", with(ok(), "10", "image", "../secret.png"), "10", "image", "value_not_valid", "would leave the input folder"},
		{"picture through a symlink", with(ok(), "10", "image", "out/secret.png"), "10", "image", "value_not_valid", "leads out of the input folder"},
		{"not a picture", with(ok(), "10", "image", "notes.png"), "10", "image", "value_not_valid", "is not a PNG or JPEG"},
		{"no picture", with(ok(), "10", "image", ""), "10", "image", "value_not_valid", "POST /upload/image"},
		{"denoise 0", with(ok(), "3", "denoise", 0), "3", "denoise", "value_not_valid", "in (0, 1]"},
		{"denoise over 1", with(ok(), "3", "denoise", 1.5), "3", "denoise", "value_not_valid", "in (0, 1]"},
		{"denoise making a schedule too long", with(ok(), "3", "denoise", 0.0001), "3", "denoise", "value_not_valid", "over the 10000"},
		{"denoise over an empty latent", with(comfyDefault("sd", "euler"), "3", "denoise", 0.5), "3", "denoise", "value_not_valid", "EmptyLatentImage"},
		{"steps 0", with(ok(), "3", "steps", 0), "3", "steps", "value_not_valid", "from 1 to 10000"},
		{"two checkpoints", twoCkpts, "12", "ckpt_name", "value_not_valid", "one checkpoint a prompt"},
		{"advanced add_noise disable", comfyAdvanced(ok(), "disable", 20, 8, 20), "3", "add_noise", "value_not_valid", `"disable"`},
		{"advanced ends early", comfyAdvanced(ok(), "enable", 20, 8, 10), "3", "end_at_step", "value_not_valid", "10 of 20 steps"},
		{"advanced starts at the end", comfyAdvanced(ok(), "enable", 20, 20, 20), "3", "start_at_step", "value_not_valid", "20 of 20 steps"},
		{"advanced start over an empty latent", comfyAdvanced(comfyDefault("sd", "euler"), "enable", 20, 5, 20), "3", "start_at_step", "value_not_valid", "EmptyLatentImage"},
		{"advanced leftover noise", with(comfyAdvanced(ok(), "enable", 20, 8, 20), "3", "return_with_leftover_noise", "maybe"), "3", "return_with_leftover_noise", "value_not_valid", `"maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do("POST", "/api/prompt", map[string]any{"prompt": tc.graph})
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var out comfyRefused
			json.Unmarshal(b, &out)
			if resp.StatusCode != 400 || out.Error.Type != "prompt_outputs_failed_validation" {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			ne := out.NodeErrors[tc.node]
			found := false
			for _, e := range ne.Errors {
				if e.Type == tc.typ && e.ExtraInfo["input_name"] == tc.input && strings.Contains(e.Details, tc.want) {
					found = true
				}
			}
			if !found || ne.ClassType == "" || len(ne.DependentOutputs) != 1 {
				t.Errorf("want node %s input %s %s %q; got %s", tc.node, tc.input, tc.typ, tc.want, b)
			}
		})
	}
	if len(f.reqs) != 0 {
		t.Errorf("%d jobs ran", len(f.reqs))
	}
}

// FuzzComfyGraph: whatever the graph, parseComfyGraph never panics, and a
// graph it takes names a prompt, a model and, for img2img, a strength in
// (0, 1].
func FuzzComfyGraph(f *testing.F) {
	for _, g := range []map[string]any{comfyDefault("sd", "euler"), comfyImg2Img("start.png", 0.6),
		comfyAdvanced(comfyImg2Img("start.png", 1), "enable", 20, 8, 20)} {
		b, _ := json.Marshal(g)
		f.Add(string(b))
	}
	for _, s := range []string{`{"9":{"class_type":"SaveImage","inputs":{"images":["9",0]}}}`,
		`{"9":{"class_type":"SaveImage","inputs":{"images":["8",99999999999999999999]}},"8":{"class_type":"VAEDecode"}}`,
		`{"9":{"class_type":"SaveImage","inputs":{"images":[["8"],{}]}}}`, `{"9":{"class_type":"SaveImage","inputs":null}}`} {
		f.Add(s)
	}
	pic := grey(64, 64, 1)
	load := func(ref string) ([]byte, *Error) {
		if ref == "start.png" {
			return pic, nil
		}
		return nil, badRequest("invalid_value", "filename", "%q is not in the input folder", ref)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var g map[string]comfyNode
		if json.Unmarshal([]byte(s), &g) != nil {
			return
		}
		cg, refused := parseComfyGraph(g, load)
		if (cg == nil) == (refused == nil) {
			t.Fatalf("graph %s: %v and %v", s, cg, refused)
		}
		if cg != nil && (cg.req.Model == "" && cg.req.Prompt == "" || cg.req.InitImage != nil && !(cg.req.Strength > 0 && cg.req.Strength <= 1)) {
			t.Errorf("graph %s ran %+v", s, cg.req)
		}
	})
}
