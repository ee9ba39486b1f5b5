package image

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/diffusion"
)

// A1111 names, as stable-diffusion-webui's samplers and schedulers are
// labelled in its UI and infotext (modules/sd_samplers_kdiffusion.py,
// modules/sd_schedulers.py). ddim_trailing is sd.cpp's DDIM; lcm's
// schedule has no A1111 label and keeps sd.cpp's name.
var (
	a1111Samplers = map[diffusion.Method]string{
		diffusion.Euler: "Euler", diffusion.EulerA: "Euler a", diffusion.Heun: "Heun", diffusion.DPM2: "DPM2",
		diffusion.DPMPP2M: "DPM++ 2M", diffusion.DPMPP2SA: "DPM++ 2S a", diffusion.LCM: "LCM", diffusion.DDIMTrailing: "DDIM",
	}
	a1111Schedules = map[diffusion.Scheduler]string{
		diffusion.Discrete: "Uniform", diffusion.Karras: "Karras", diffusion.Exponential: "Exponential",
		diffusion.Simple: "Simple", diffusion.LCMSchedule: "LCM",
	}
)

// Infotext is the "parameters" text A1111's create_infotext writes
// (modules/processing.py), which A1111, Forge, ComfyUI readers and Civitai
// parse: the prompt, "Negative prompt: …" when there is one, then
// "key: value" pairs joined by ", " in A1111's order — Steps, Sampler,
// Schedule type, CFG scale, Seed, Size (W×H), Model hash (the first 10
// hex digits of the checkpoint's SHA-256, A1111's shorthash), Model (the
// file name without extension), VAE hash and VAE (a separate VAE),
// Denoising strength (img2img), Clip skip (above 1), RNG (A1111's
// "randn_source": absent for GPU noise, which Philox reproduces; "CPU"
// for torch's CPU generator), Version. A value with a comma, colon or
// newline is JSON-quoted, as A1111's infotext_utils.quote does.
func Infotext(s *Settings, seed int64, modelSHA, vaeSHA string) string {
	type kv struct{ k, v string }
	ps := []kv{
		{"Steps", strconv.Itoa(s.Steps)},
		{"Sampler", a1111Samplers[s.Method]},
		{"Schedule type", a1111Schedules[s.Schedule]},
		{"CFG scale", formatFloat(s.CFGScale)},
		{"Seed", strconv.FormatInt(seed, 10)},
		{"Size", fmt.Sprintf("%dx%d", s.Width, s.Height)},
	}
	if len(modelSHA) >= 10 {
		ps = append(ps, kv{"Model hash", modelSHA[:10]})
	}
	ps = append(ps, kv{"Model", stem(s.Model)})
	if s.VAE != "" {
		if len(vaeSHA) >= 10 {
			ps = append(ps, kv{"VAE hash", vaeSHA[:10]})
		}
		ps = append(ps, kv{"VAE", filepath.Base(s.VAE)})
	}
	if s.InitImage != "" {
		ps = append(ps, kv{"Denoising strength", formatFloat(s.Strength)})
	}
	if s.ClipSkip > 1 {
		ps = append(ps, kv{"Clip skip", strconv.Itoa(s.ClipSkip)})
	}
	if s.RNG == "cpu" {
		ps = append(ps, kv{"RNG", "CPU"})
	}
	ps = append(ps, kv{"Version", "glassbox"})
	var b strings.Builder
	b.WriteString(s.Prompt)
	if s.Negative != "" {
		b.WriteString("\nNegative prompt: ")
		b.WriteString(s.Negative)
	}
	b.WriteString("\n")
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.k)
		b.WriteString(": ")
		b.WriteString(quote(p.v))
	}
	return strings.TrimSpace(b.String())
}

// quote is A1111's infotext_utils.quote: text with a comma, colon or
// newline becomes a JSON string (json.dumps: non-ASCII escaped as \uXXXX).
func quote(v string) string {
	if !strings.ContainsAny(v, ",:\n") {
		return v
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r > 0x7e:
			if r > 0xffff {
				r -= 0x10000
				fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// formatFloat prints a float32 as Python prints the number a UI slider
// sends: the shortest form, without a trailing ".0" for whole numbers
// (A1111's "CFG scale: 7", "Denoising strength: 0.75").
func formatFloat(f float32) string { return strconv.FormatFloat(float64(f), 'f', -1, 32) }

// stem is a file's name without its folder and extension (A1111's
// checkpoint name_for_extra).
func stem(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// Record is the JSON job record stored in each PNG (key "glassbox").
type Record struct {
	Job         string             `json:"job"`
	Kind        string             `json:"kind"` // "image"
	Model       string             `json:"model"`
	ModelSHA256 string             `json:"model_sha256"`
	VAE         string             `json:"vae,omitempty"`
	VAESHA256   string             `json:"vae_sha256,omitempty"`
	Image       int                `json:"image"` // index in the batch
	Seed        int64              `json:"seed"`
	RNG         string             `json:"rng"`
	Sampler     string             `json:"sampler"`
	Scheduler   string             `json:"scheduler"`
	Steps       int                `json:"steps"`
	CFGScale    float32            `json:"cfg_scale"`
	Width       int                `json:"width"`
	Height      int                `json:"height"`
	ClipSkip    int                `json:"clip_skip"`
	InitImage   string             `json:"init_image,omitempty"`
	Strength    float32            `json:"strength,omitempty"`
	Latents     string             `json:"latents,omitempty"` // the saved final latent
	StagesMS    map[string]float64 `json:"stages_ms"`
	RetryOf     string             `json:"retry_of,omitempty"` // decode JOB: the job whose latents these are
}

func (r *Record) json() (string, error) {
	b, err := json.Marshal(r)
	return string(b), err
}
