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
