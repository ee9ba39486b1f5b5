package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// TestImageRefusals checks that bad settings are refused in stage plan
// with every field named, before the checkpoint is opened, and that the
// job is journaled as failed there.
func TestImageRefusals(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "none.safetensors")
	writeSafetensors(t, ckpt, map[string][]int{"x": {1}})
	home := filepath.Join(dir, "home")
	_, errs, code := runCmd(t, "", "image", "-m", ckpt, "-p", "a cat", "-W", "100", "-H", "64", "--steps", "0",
		"--sampler", "foo", "-i", filepath.Join(dir, "missing.png"), "-o", filepath.Join(dir, "o.png"), "--home", home)
	if code == 0 || !strings.Contains(errs, "init image") {
		t.Fatalf("code %d, stderr %q", code, errs)
	}
	_, errs, code = runCmd(t, "", "image", "-m", ckpt, "-p", "a cat", "-W", "100", "-H", "64", "--steps", "0",
		"--sampler", "foo", "--strength", "2", "-o", filepath.Join(dir, "o.png"), "--home", home)
	for _, want := range []string{"plan: invalid settings: width: 100 pixels is not a multiple of 8", "steps: 0, want 1 to 10000",
		`unknown sampler "foo" (known: euler, euler_a,`, "strength: 2 without an init image"} {
		if code == 0 || !strings.Contains(errs, want) {
			t.Errorf("code %d, stderr lacks %q: %s", code, want, errs)
		}
	}
	out, _, _ := runCmd(t, "", "jobs", "--home", home)
	if !strings.Contains(out, "image") || !strings.Contains(out, "failed") {
		t.Errorf("jobs:\n%s", out)
	}
}

// TestPlanCheckpoint plans image jobs on sd15-rand from its header.
func TestPlanCheckpoint(t *testing.T) {
	ckpt := sdtest.SD15(t, "f16")
	out, errs, code := runCmd(t, "", "plan", "-m", ckpt, "--width", "256", "--height", "256", "--steps", "4", "--sampler", "euler", "--probe=false")
	for _, want := range []string{"image 256x256, 4 steps of euler (discrete), cfg 7: 8 UNet calls an image", "UNet                     2.70 GiB  F16 weights, convolutions packed as F16",
		"activations at 32x32 latent", ": fits", "time: "} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("code %d, output lacks %q:\n%s%s", code, want, out, errs)
		}
	}
	out, errs, code = runCmd(t, "", "plan", "-m", ckpt, "--width", "1024", "--height", "1024", "--mem-budget", "2GiB", "--probe=false")
	if code == 0 || !strings.Contains(out, "does not fit") || !strings.Contains(errs, "more than the 2.00 GiB available") || !strings.Contains(errs, "-W 512 -H 512") {
		t.Errorf("code %d:\n%s%s", code, out, errs)
	}
}

// TestImageAndDecodeJob makes a small image with the real networks
// (64×64, one step at cfg 1: one UNet call), then decode JOB re-decodes
// its saved latents to the same pixels; explain shows the timeline's
// parts. The networks' load dominates (tens of seconds); -short skips it.
func TestImageAndDecodeJob(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: loads the SD 1.5 networks")
	}
	sdtest.NeedMemory(t, 6<<30)
	ckpt := sdtest.SD15(t, "f16")
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	t.Setenv("GLASSBOX_HOME", home) // the hash cache and history
	out := filepath.Join(dir, "cat.png")
	stdout, errs, code := runCmd(t, "", "image", "-m", ckpt, "-p", "a lovely cat", "-W", "64", "-H", "64", "-s", "7",
		"--steps", "1", "--cfg-scale", "1", "--sampler", "euler", "-o", out, "--home", home)
	if code != 0 || !strings.Contains(stdout, out+": seed 7") {
		t.Fatalf("image: code %d\n%s%s", code, stdout, errs)
	}
	id := filepath.Base(filepath.Dir(strings.TrimSuffix(strings.Fields(stdout[strings.Index(stdout, "latents ")+8:])[0], ")")))
	ex, _, _ := runCmd(t, "", "explain", id, "--home", home)
	for _, want := range []string{"text encoder", "UNet", "VAE", "prompt", "step 1/1", "save latents 1", "image 1", "cat.png"} {
		if !strings.Contains(ex, want) {
			t.Errorf("explain %s lacks %q:\n%s", id, want, ex)
		}
	}
	again := filepath.Join(dir, "again.png")
	stdout, errs, code = runCmd(t, "", "decode", id, "-o", again, "--home", home)
	if code != 0 || !strings.Contains(stdout, again+": seed 7") {
		t.Fatalf("decode %s: code %d\n%s%s", id, code, stdout, errs)
	}
	if a, b := pngPixels(t, out), pngPixels(t, again); a != b {
		t.Error("decode JOB made other pixels than the job")
	}
}

func pngPixels(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c0, c1, c2, _ := img.At(x, y).RGBA()
			b.Write([]byte{byte(c0 >> 8), byte(c1 >> 8), byte(c2 >> 8)})
		}
	}
	return b.String()
}
