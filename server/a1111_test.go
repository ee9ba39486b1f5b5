package server

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestA1111OpenWebUI sends what Open WebUI's AUTOMATIC1111 engine sends
// (backend/open_webui/routers/images.py): GET /sdapi/v1/options for the
// checkpoint, POST the options back with sd_model_checkpoint set,
// GET /sdapi/v1/sd-models for the list, then txt2img with prompt,
// batch_size, width, height, steps and negative_prompt and an empty
// authorization header.
func TestA1111OpenWebUI(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	var opts map[string]any
	decode(t, ts.do("GET", "/sdapi/v1/options", nil, "authorization", ""), 200, &opts)
	if opts["sd_model_checkpoint"] != "sd" || opts["samples_format"] != "png" {
		t.Fatalf("options %v", opts)
	}
	opts["sd_model_checkpoint"] = "sd [0123456789]" // a title
	decode(t, ts.do("POST", "/sdapi/v1/options", opts, "authorization", ""), 200, nil)
	var models []a1111Model
	decode(t, ts.do("GET", "/sdapi/v1/sd-models", nil, "authorization", ""), 200, &models)
	if len(models) != 1 || models[0].Title != "sd" || models[0].ModelName != "sd" || models[0].Filename != "/models/sd.safetensors" {
		t.Fatalf("sd-models %+v", models)
	}
	var out a1111Response
	decode(t, ts.do("POST", "/sdapi/v1/txt2img", map[string]any{"prompt": "a fox in snow", "batch_size": 2, "width": 128,
		"height": 64, "steps": 3, "negative_prompt": "blurry"}, "authorization", ""), 200, &out)
	if len(out.Images) != 2 {
		t.Fatalf("%d images", len(out.Images))
	}
	b, _ := base64.StdEncoding.DecodeString(out.Images[1])
	if w, h, _ := pngSize(t, b); w != 128 || h != 64 {
		t.Errorf("image %dx%d", w, h)
	}
	r := f.reqs[len(f.reqs)-1]
	if r.Model != "sd" || r.Sampler != "euler" || r.Steps != 3 || r.N != 2 || r.Negative != "blurry" || r.CFGScale != 7 || r.Seed != 1234 {
		t.Errorf("the job ran %+v", r)
	}
	if p := out.Parameters; p.Prompt != "a fox in snow" || p.BatchSize != 2 || p.CFGScale != 7 || p.Seed != -1 || p.SamplerIndex != "Euler" {
		t.Errorf("parameters %+v", p)
	}
	var info a1111Info
	if err := json.Unmarshal([]byte(out.Info), &info); err != nil {
		t.Fatalf("info is not a JSON string: %q", out.Info)
	}
	if info.Seed != 1234 || len(info.AllSeeds) != 2 || info.AllSeeds[1] != 1235 || info.Width != 128 || len(info.Infotexts) != 2 ||
		info.SDModelHash != "0123456789" || info.SamplerName != "Euler a" {
		t.Errorf("info %+v", info)
	}
}

func TestA1111Requests(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	for _, tc := range []struct {
		name    string
		path    string
		body    map[string]any
		status  int
		want    string
		sampler string
		sched   string
	}{
		{"legacy karras name", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "sampler_name": "DPM++ 2M Karras", "width": 64, "height": 64, "steps": 1}, 200, "", "dpm++2m", "karras"},
		{"scheduler label", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "sampler_name": "Euler a", "scheduler": "Exponential", "width": 64, "height": 64, "steps": 1}, 200, "", "euler_a", "exponential"},
		{"unknown sampler", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "sampler_name": "UniPC"}, 400, "UniPC", "", ""},
		{"hires fix", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "enable_hr": true}, 400, "enable_hr", "", ""},
		{"model override", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "override_settings": map[string]any{"sd_model_checkpoint": "nope"}}, 404, "nope", "", ""},
		{"img2img needs an image", "/sdapi/v1/img2img", map[string]any{"prompt": "x"}, 400, "one init image", "", ""},
		{"img2img", "/sdapi/v1/img2img", map[string]any{"prompt": "x", "init_images": []string{"data:image/png;base64," + base64.StdEncoding.EncodeToString(grey(64, 64, 1))},
			"denoising_strength": 0.4, "steps": 2}, 200, "", "euler", ""},
		{"too many", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "batch_size": 4, "n_iter": 3}, 400, "batch_size", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(f.reqs)
			resp := ts.do("POST", tc.path, tc.body)
			var body map[string]any
			decode(t, resp, tc.status, &body)
			if tc.status != 200 {
				if !strings.Contains(body["detail"].(string), tc.want) {
					t.Errorf("detail %q, want %q", body["detail"], tc.want)
				}
				return
			}
			if len(f.reqs) != n+1 {
				t.Fatal("no job ran")
			}
			r := f.reqs[n]
			if r.Sampler != tc.sampler || r.Scheduler != tc.sched {
				t.Errorf("sampler %q scheduler %q, want %q %q", r.Sampler, r.Scheduler, tc.sampler, tc.sched)
			}
			if tc.path == "/sdapi/v1/img2img" && (r.Strength != 0.4 || len(r.InitImage) == 0 || r.Width != 0) {
				t.Errorf("img2img ran %+v", r)
			}
		})
	}
	var samplers []struct{ Name string }
	decode(t, ts.do("GET", "/sdapi/v1/samplers", nil), 200, &samplers)
	var schedulers []struct{ Name, Label string }
	decode(t, ts.do("GET", "/sdapi/v1/schedulers", nil), 200, &schedulers)
	if len(samplers) != len(a1111Samplers) || samplers[0].Name != "Euler a" || schedulers[2].Label != "Karras" {
		t.Errorf("samplers %v schedulers %v", samplers, schedulers)
	}
}

// TestA1111Progress: /progress follows the running job step by step with
// its preview; /interrupt stops it.
func TestA1111Progress(t *testing.T) {
	f := newImageFake(t)
	f.step = make(chan struct{})
	ts := startImages(t, f)
	var idle a1111Progress
	decode(t, ts.do("GET", "/sdapi/v1/progress", nil), 200, &idle)
	if idle.Progress != 0 || idle.CurrentImage != nil || idle.State.JobCount != 0 {
		t.Errorf("idle progress %+v", idle)
	}
	done := make(chan *http.Response, 1)
	go func() {
		done <- ts.do("POST", "/sdapi/v1/txt2img", map[string]any{"prompt": "x", "width": 64, "height": 64, "steps": 4})
	}()
	f.step <- struct{}{}
	f.step <- struct{}{}
	var p a1111Progress
	waitFor(t, "step 2 in /progress", func() bool {
		decode(t, ts.do("GET", "/sdapi/v1/progress", nil), 200, &p)
		return p.State.SamplingStep == 2
	})
	if p.Progress != 0.5 || p.State.SamplingSteps != 4 || p.CurrentImage == nil || p.State.JobCount != 1 {
		t.Errorf("progress %+v", p)
	}
	decode(t, ts.do("POST", "/sdapi/v1/interrupt", nil), 200, nil)
	resp := <-done
	var e map[string]any
	decode(t, resp, 499, &e)
	decode(t, ts.do("GET", "/sdapi/v1/progress", nil), 200, &p)
	if !p.State.Interrupted {
		t.Errorf("after interrupt: %+v", p)
	}
}
