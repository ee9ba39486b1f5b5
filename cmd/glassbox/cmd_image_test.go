package main

import (
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
	for _, want := range []string{"image 256x256, 4 steps of euler (discrete), cfg 7: 8 UNet calls an image", "UNet                     3.80 GiB  F16 weights, convolutions packed as F32",
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
