package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/api"
)

// OpenAI's image endpoints (platform.openai.com/docs/api-reference/images):
// POST /v1/images/generations with a JSON body and POST /v1/images/edits
// with a multipart form, each answering {"created", "data": [{"b64_json"
// | "url"}], …}, or with "stream": true Server-Sent Events —
// partial_images (0 to 3) image_generation.partial_image events (for
// edits image_edit.partial_image) and one image_generation.completed
// (image_edit.completed) per image. The partial images are the job's
// previews (the step's latent at 1/8 of the size), taken at steps spread
// evenly over the sampling. glassbox's extensions take the image job's
// settings: negative_prompt, steps, cfg_scale, sampler, scheduler, seed,
// and for edits strength. quality, background, moderation, style and
// user are accepted and have no effect, as the fields an OpenAI-compatible
// server does not use.

// openAIImageRequest is POST /v1/images/generations's body (and the
// fields of /v1/images/edits's form).
type openAIImageRequest struct {
	Model          string `json:"model"`
	Prompt         string `json:"prompt"`
	N              *int   `json:"n"`
	Size           string `json:"size"`
	ResponseFormat string `json:"response_format"`
	OutputFormat   string `json:"output_format"`
	Stream         bool   `json:"stream"`
	PartialImages  int    `json:"partial_images"`
	// glassbox's extensions.
	Negative  string   `json:"negative_prompt"`
	Steps     int      `json:"steps"`
	CFGScale  float32  `json:"cfg_scale"`
	Sampler   string   `json:"sampler"`
	Scheduler string   `json:"scheduler"`
	Seed      *int64   `json:"seed"`
	Strength  *float32 `json:"strength"`
}

type openAIImagesResponse struct {
	Created      int64             `json:"created"`
	Data         []openAIImageData `json:"data"`
	OutputFormat string            `json:"output_format"`
	Size         string            `json:"size"`
	Quality      string            `json:"quality"`
	Background   string            `json:"background"`
	Usage        openAIImageUsage  `json:"usage"`
}

type openAIImageData struct {
	B64JSON       string `json:"b64_json,omitempty"`
	URL           string `json:"url,omitempty"`
	RevisedPrompt string `json:"revised_prompt,omitempty"`
}

// openAIImageUsage counts tokens as OpenAI's image models bill them; a
// diffusion model's prompt is CLIP tokens, not counted here: zeros.
type openAIImageUsage struct {
	TotalTokens        int `json:"total_tokens"`
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails struct {
		TextTokens  int `json:"text_tokens"`
		ImageTokens int `json:"image_tokens"`
	} `json:"input_tokens_details"`
}

// openAIImageEvent is one streamed event.
type openAIImageEvent struct {
	Type              string            `json:"type"`
	B64JSON           string            `json:"b64_json"`
	CreatedAt         int64             `json:"created_at"`
	Size              string            `json:"size"`
	Quality           string            `json:"quality"`
	Background        string            `json:"background"`
	OutputFormat      string            `json:"output_format"`
	PartialImageIndex *int              `json:"partial_image_index,omitempty"`
	Usage             *openAIImageUsage `json:"usage,omitempty"`
}

func (s *Server) openAIImageGenerations(w http.ResponseWriter, r *http.Request) {
	var body openAIImageRequest
	if e := s.decodeBody(w, r, &body); e != nil {
		writeOpenAIError(w, e)
		return
	}
	if body.Strength != nil {
		writeOpenAIError(w, badRequest("invalid_value", "strength", "strength is for /v1/images/edits (an image to start from)"))
		return
	}
	s.openAIImages(w, r, &body, nil, "image_generation")
}

// openAIImageEdits is POST /v1/images/edits: multipart image (PNG or
// JPEG), prompt and the rest as form fields.
func (s *Server) openAIImageEdits(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := r.ParseMultipartForm(min(s.cfg.MaxBodyBytes, 32<<20)); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeOpenAIError(w, &Error{Status: http.StatusRequestEntityTooLarge, Stage: "deliver", Code: "body_too_large",
				Message: fmt.Sprintf("request body exceeds the limit of %d bytes", mb.Limit), Hint: "send a smaller image or raise --max-body"})
			return
		}
		writeOpenAIError(w, badRequest("invalid_request", "", "a multipart/form-data body with image and prompt is required: %v", err))
		return
	}
	defer r.MultipartForm.RemoveAll()
	body, e := imageForm(r.MultipartForm)
	var init []byte
	if e == nil {
		init, e = formImage(r.MultipartForm)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	s.openAIImages(w, r, body, init, "image_edit")
}

// imageForm reads the edit form's fields.
func imageForm(f *multipart.Form) (*openAIImageRequest, *Error) {
	get := func(k string) string {
		if v := f.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	body := &openAIImageRequest{Model: get("model"), Prompt: get("prompt"), Size: get("size"), ResponseFormat: get("response_format"),
		OutputFormat: get("output_format"), Negative: get("negative_prompt"), Sampler: get("sampler"), Scheduler: get("scheduler")}
	for _, num := range []struct {
		k   string
		set func(float64)
		int bool
	}{
		{"n", func(v float64) { n := int(v); body.N = &n }, true},
		{"partial_images", func(v float64) { body.PartialImages = int(v) }, true},
		{"steps", func(v float64) { body.Steps = int(v) }, true},
		{"seed", func(v float64) { n := int64(v); body.Seed = &n }, true},
		{"cfg_scale", func(v float64) { body.CFGScale = float32(v) }, false},
		{"strength", func(v float64) { x := float32(v); body.Strength = &x }, false},
	} {
		v := get(num.k)
		if v == "" {
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || num.int && x != float64(int64(x)) {
			return nil, badRequest("invalid_value", num.k, "%s %q is not a number%s", num.k, v, map[bool]string{true: " (a whole one)"}[num.int])
		}
		num.set(x)
	}
	if v := get("stream"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, badRequest("invalid_value", "stream", "stream %q is not true or false", v)
		}
		body.Stream = b
	}
	return body, nil
}

// formImage is the edit form's image: the file "image" (or "image[]",
// as clients send a list).
func formImage(f *multipart.Form) ([]byte, *Error) {
	files := f.File["image"]
	if len(files) == 0 {
		files = f.File["image[]"]
	}
	if len(files) != 1 {
		return nil, badRequest("invalid_request", "image", "one image file is required (got %d): the picture to start from", len(files))
	}
	fh, err := files[0].Open()
	if err != nil {
		return nil, badRequest("invalid_request", "image", "reading the image: %v", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(fh)
	if err != nil {
		return nil, badRequest("invalid_request", "image", "reading the image: %v", err)
	}
	return b, nil
}

// parseSize reads OpenAI's size, "WxH" or "auto" (0×0: the default, or
// an edit's image's size).
func parseSize(size string) (int, int, *Error) {
	if size == "" || size == "auto" {
		return 0, 0, nil
	}
	ws, hs, ok := strings.Cut(size, "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 1 || h < 1 {
		return 0, 0, badRequest("invalid_value", "size", `size %q is not "WIDTHxHEIGHT" (such as "512x512") or "auto"`, size)
	}
	return w, h, nil
}

// openAIImages runs an image request of either endpoint; prefix names its
// stream's events.
func (s *Server) openAIImages(w http.ResponseWriter, r *http.Request, body *openAIImageRequest, init []byte, prefix string) {
	req := &ImageRequest{Model: body.Model, Prompt: body.Prompt, Negative: body.Negative, Steps: body.Steps, CFGScale: body.CFGScale,
		Sampler: body.Sampler, Scheduler: body.Scheduler, Seed: -1, N: 1, InitImage: init}
	var e *Error
	req.Width, req.Height, e = parseSize(body.Size)
	switch {
	case e != nil:
	case body.N != nil && (*body.N < 1 || *body.N > maxImageN):
		e = badRequest("invalid_value", "n", "n is %d: 1 to %d images a request", *body.N, maxImageN)
	case body.ResponseFormat != "" && body.ResponseFormat != "b64_json" && body.ResponseFormat != "url":
		e = badRequest("invalid_value", "response_format", `response_format must be "b64_json" or "url", not %q`, body.ResponseFormat)
	case body.OutputFormat != "" && body.OutputFormat != "png":
		e = badRequest("invalid_value", "output_format", `output_format %q: glassbox writes "png" (with the settings in its text chunks)`, body.OutputFormat)
	case body.PartialImages < 0 || body.PartialImages > 3:
		e = badRequest("invalid_value", "partial_images", "partial_images is %d: 0 to 3", body.PartialImages)
	}
	if body.N != nil {
		req.N = *body.N
	}
	if body.Seed != nil {
		req.Seed = *body.Seed
	}
	if body.Strength != nil {
		req.Strength = *body.Strength
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	ctx, cancel := s.requestContext(r)
	defer cancel()
	g, e := s.startImage(ctx, ctx, req)
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	w.Header().Set("X-Glassbox-Job", g.job.ID)
	meta := openAIImageEvent{CreatedAt: time.Now().Unix(), Quality: "auto", Background: "opaque", OutputFormat: "png"}
	if body.Stream {
		s.streamOpenAIImages(ctx, w, g, body.PartialImages, prefix, meta)
		return
	}
	res, e := waitImage(ctx, g)
	var pngs [][]byte
	if e == nil {
		pngs, e = s.readImages(g)
	}
	if e != nil {
		writeOpenAIError(w, e)
		return
	}
	out := openAIImagesResponse{Created: meta.CreatedAt, OutputFormat: "png", Quality: "auto", Background: "opaque",
		Size: fmt.Sprintf("%dx%d", res.Settings.Width, res.Settings.Height)}
	for i, b := range pngs {
		if body.ResponseFormat == "url" {
			out.Data = append(out.Data, openAIImageData{URL: absoluteURL(r, res.Images[i].URL)})
		} else {
			out.Data = append(out.Data, openAIImageData{B64JSON: base64.StdEncoding.EncodeToString(b)})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// absoluteURL is path on the server r was sent to.
func absoluteURL(r *http.Request, path string) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + path
}

// partialSteps are the steps whose previews are sent as k partial images
// of a sampling of steps steps: spread evenly, the last step left to the
// final image.
func partialSteps(k, steps int) map[int]bool {
	out := map[int]bool{}
	for i := 1; i <= k; i++ {
		st := (i*steps + k/2) / (k + 1)
		if st >= 1 && st < steps {
			out[st] = true
		}
	}
	return out
}

// streamOpenAIImages follows job g's events: partial images from its
// previews, then each image as a completed event.
func (s *Server) streamOpenAIImages(ctx context.Context, w http.ResponseWriter, g *generation, k int, prefix string, meta openAIImageEvent) {
	events, err := s.cfg.Jobs.Events(ctx, g.job.ID, 0)
	if err != nil {
		writeOpenAIError(w, toError(err))
		return
	}
	sw := newStreamWriter(w, "text/event-stream", s.cfg.WriteTimeout)
	w.WriteHeader(http.StatusOK)
	send := func(ev openAIImageEvent) error {
		b, _ := json.Marshal(ev) // plain data: cannot fail
		return sw.sse("", ev.Type, b)
	}
	var partials map[int]bool
	sent := map[int]int{} // partial images sent, by image of the batch
	for ev := range events {
		if ev.Type != api.TypePreview || ev.Preview == nil || k == 0 {
			continue
		}
		p := ev.Preview
		if partials == nil {
			partials = partialSteps(k, p.Steps)
		}
		if !partials[p.Step] || sent[p.Image] >= k {
			continue
		}
		pe := meta
		pe.Type, pe.B64JSON = prefix+".partial_image", base64.StdEncoding.EncodeToString(p.PNG)
		pe.Size = fmt.Sprintf("%dx%d", p.Width, p.Height)
		idx := sent[p.Image]
		pe.PartialImageIndex = &idx
		sent[p.Image]++
		if send(pe) != nil {
			return // the client is gone: ctx ends the job
		}
	}
	res, e := waitImage(ctx, g)
	var pngs [][]byte
	if e == nil {
		pngs, e = s.readImages(g)
	}
	if e != nil {
		b, _ := json.Marshal(e.openAI())
		sw.sse("", "error", b)
		return
	}
	for _, b := range pngs {
		ce := meta
		ce.Type, ce.B64JSON = prefix+".completed", base64.StdEncoding.EncodeToString(b)
		ce.Size = fmt.Sprintf("%dx%d", res.Settings.Width, res.Settings.Height)
		ce.Usage = &openAIImageUsage{}
		if send(ce) != nil {
			return
		}
	}
}
