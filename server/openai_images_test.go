package server

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
)

func TestOpenAIImages(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	var out openAIImagesResponse
	decode(t, ts.do("POST", "/v1/images/generations", map[string]any{"model": "sd", "prompt": "a fox", "n": 2, "size": "128x64",
		"seed": 5, "steps": 4, "quality": "high"}), 200, &out)
	if len(out.Data) != 2 || out.Size != "128x64" || out.OutputFormat != "png" {
		t.Fatalf("response %+v", out)
	}
	for i, d := range out.Data {
		b, err := base64.StdEncoding.DecodeString(d.B64JSON)
		if err != nil {
			t.Fatal(err)
		}
		if w, h, g := pngSize(t, b); w != 128 || h != 64 || g != uint8(5+i) {
			t.Errorf("image %d: %dx%d grey %d", i, w, h, g)
		}
	}
	if r := f.reqs[len(f.reqs)-1]; r.Steps != 4 || r.Seed != 5 || r.N != 2 || r.Width != 128 {
		t.Errorf("the image job ran with %+v", r)
	}
	// No model: the first image model.
	decode(t, ts.do("POST", "/v1/images/generations", map[string]any{"prompt": "a fox", "size": "64x64", "response_format": "url"}), 200, &out)
	if len(out.Data) != 1 || !strings.HasPrefix(out.Data[0].URL, ts.url+"/v1/jobs/") {
		t.Fatalf("url response %+v", out)
	}
	resp := ts.do("GET", strings.TrimPrefix(out.Data[0].URL, ts.url), nil)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("GET the url: %d", resp.StatusCode)
	}

	// Streamed: 2 partial images of 6 steps (steps 2 and 4), then the image.
	resp = ts.do("POST", "/v1/images/generations", map[string]any{"model": "sd", "prompt": "a fox", "size": "64x64", "steps": 6,
		"stream": true, "partial_images": 2})
	evs := readSSE(t, resp.Body, 0)
	resp.Body.Close()
	var types []string
	for _, e := range evs {
		var ev openAIImageEvent
		json.Unmarshal([]byte(e.data), &ev)
		if ev.Type != e.event {
			t.Errorf("event %q has type %q", e.event, ev.Type)
		}
		types = append(types, ev.Type)
		b, _ := base64.StdEncoding.DecodeString(ev.B64JSON)
		w, _, g := pngSize(t, b)
		switch {
		case ev.Type == "image_generation.partial_image" && (w != 8 || ev.PartialImageIndex == nil || g != uint8(2**ev.PartialImageIndex+1)):
			t.Errorf("partial image %+v: width %d grey %d", ev.PartialImageIndex, w, g)
		case ev.Type == "image_generation.completed" && (w != 64 || ev.Usage == nil):
			t.Errorf("completed: width %d usage %v", w, ev.Usage)
		}
	}
	if want := "image_generation.partial_image image_generation.partial_image image_generation.completed"; strings.Join(types, " ") != want {
		t.Errorf("events %v, want %s", types, want)
	}

	for _, tc := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"model": "sd", "prompt": "x", "size": "big"}, "WIDTHxHEIGHT"},
		{map[string]any{"model": "sd", "prompt": "x", "output_format": "webp"}, "png"},
		{map[string]any{"model": "sd", "prompt": "x", "partial_images": 4}, "0 to 3"},
		{map[string]any{"model": "sd", "prompt": "x", "response_format": "file"}, "b64_json"},
		{map[string]any{"model": "sd", "prompt": "x", "strength": 0.5}, "edits"},
		{map[string]any{"model": "sd"}, "prompt is required"},
	} {
		resp := ts.do("POST", "/v1/images/generations", tc.body)
		var e struct {
			Error struct{ Message, Type string }
		}
		decode(t, resp, 400, &e)
		if !strings.Contains(e.Error.Message, tc.want) || e.Error.Type == "" {
			t.Errorf("%v: %+v, want %q", tc.body, e.Error, tc.want)
		}
	}
}

func TestOpenAIImageEdits(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, _ := mw.CreateFormFile("image", "in.png")
	fw.Write(grey(64, 64, 9))
	for k, v := range map[string]string{"prompt": "a fox", "model": "sd", "strength": "0.5", "n": "1", "seed": "2"} {
		mw.WriteField(k, v)
	}
	mw.Close()
	req, _ := http.NewRequest("POST", ts.url+"/v1/images/edits", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var out openAIImagesResponse
	decode(t, resp, 200, &out)
	r := f.reqs[len(f.reqs)-1]
	if len(out.Data) != 1 || r.Strength != 0.5 || r.Seed != 2 || !bytes.Equal(r.InitImage, grey(64, 64, 9)) || r.InitBytes != len(r.InitImage) {
		t.Errorf("edit ran %+v (init %d bytes)", r, len(r.InitImage))
	}
	// No image: a 400 naming it.
	req, _ = http.NewRequest("POST", ts.url+"/v1/images/edits", strings.NewReader("--x--\r\n"))
	req.Header.Set("Content-Type", "multipart/form-data; boundary=x")
	resp, _ = http.DefaultClient.Do(req)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), "image") {
		t.Errorf("no image: %d %s", resp.StatusCode, b)
	}
	// Too large: 413.
	small := start(t, f.fakeBackend, func(c *Config) { c.Backend = f; c.MaxBodyBytes = 1000 })
	buf.Reset()
	mw = multipart.NewWriter(&buf)
	fw, _ = mw.CreateFormFile("image", "in.png")
	fw.Write(make([]byte, 5000))
	mw.Close()
	req, _ = http.NewRequest("POST", small.url+"/v1/images/edits", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 5000-byte upload over a 1000-byte limit: %d", resp.StatusCode)
	}
}
