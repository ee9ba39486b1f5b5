package main

import (
	"encoding/binary"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/compute/conv"
	"github.com/glassbox-ai/glassbox/imageio"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

func vaeReadF32(t *testing.T, path string) []float32 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

// TestVAECommands runs encode, decode and decode JOB on the golden
// astronaut through the CLI, with a journal in a temporary home.
func TestVAECommands(t *testing.T) {
	if conv.Kernel() == "generic" {
		t.Skip("generic kernels: the golden check runs in vae; this end-to-end run needs the fast path")
	}
	enc := shared.Path(t, "models/taef2/taef2_encoder.pth")
	dec := shared.Path(t, "models/taef2/taef2_decoder.pth")
	gold := filepath.Dir(shared.Path(t, "golden/taef2/manifest.json"))
	dir := t.TempDir()
	homeDir := filepath.Join(dir, "home")
	lat := filepath.Join(dir, "a.f32")

	out, errs, code := runCmd(t, "", "vae", "encode", "-m", enc, filepath.Join(gold, "astronaut.input.png"), "-o", lat, "--home", homeDir)
	if code != 0 || !strings.Contains(out, "latents [32 32 32]") {
		t.Fatalf("encode: code %d, out %q, err %q", code, out, errs)
	}
	got, want := vaeReadF32(t, lat), vaeReadF32(t, filepath.Join(gold, "astronaut.latent.f32"))
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 2e-5 {
			t.Fatalf("latent %d: %v, want %v", i, got[i], want[i])
		}
	}

	pngPath := filepath.Join(dir, "a.png")
	out, errs, code = runCmd(t, "", "vae", "decode", "-m", dec, filepath.Join(gold, "astronaut.latent.f32"), "--shape", "32,32,32",
		"-o", pngPath, "--home", homeDir, "--json")
	if code != 0 {
		t.Fatalf("decode: code %d, err %q", code, errs)
	}
	var jobID string
	stages := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct{ Job, Type, Stage string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		jobID = ev.Job
		if ev.Type == "stage_done" {
			stages[ev.Stage] = true
		}
	}
	for _, s := range []string{"load", "plan", "decode", "deliver"} {
		if !stages[s] {
			t.Errorf("no stage_done for %s in %s", s, out)
		}
	}
	checkPNG(t, pngPath, filepath.Join(gold, "astronaut.recon.png"))
	if _, err := os.Stat(filepath.Join(homeDir, "jobs", jobID, "latents.f32")); err != nil {
		t.Fatalf("job %s saved no latents: %v", jobID, err)
	}

	// Without --shape, decode reads it from the description encode wrote.
	own := filepath.Join(dir, "own.png")
	if _, errs, code = runCmd(t, "", "vae", "decode", "-m", dec, lat, "-o", own, "--no-journal"); code != 0 {
		t.Fatalf("decode without --shape: code %d, err %q", code, errs)
	}
	if _, errs, code = runCmd(t, "", "vae", "decode", "-m", dec, filepath.Join(gold, "astronaut.latent.f32"), "-o", own, "--no-journal"); code != 0 {
		t.Fatalf("decode of the golden latents by their description: code %d, err %q", code, errs)
	}
	checkPNG(t, own, filepath.Join(gold, "astronaut.recon.png"))

	// Retry the decode from the job's saved latents, tiled this time.
	retry := filepath.Join(dir, "b.png")
	out, errs, code = runCmd(t, "", "decode", jobID, "-o", retry, "--tile", "224", "--home", homeDir)
	if code != 0 || !strings.Contains(out, "4 tiles") {
		t.Fatalf("decode JOB: code %d, out %q, err %q", code, out, errs)
	}
	checkPNG(t, retry, filepath.Join(gold, "astronaut.recon.png"))

	// A decode that fails after load (over its memory budget) keeps its
	// latents; decode JOB retries it with a budget that fits.
	_, errs, code = runCmd(t, "", "vae", "decode", "-m", dec, lat, "--shape", "32,32,32", "-o", pngPath, "--home", homeDir, "--mem-budget", "20MiB")
	if code == 0 || !strings.Contains(errs, "plan: decoding 256x256 px needs") {
		t.Fatalf("over budget: code %d, stderr %q", code, errs)
	}
	out, _, _ = runCmd(t, "", "jobs", "--json", "-n", "1", "--home", homeDir)
	var jobs []struct{ ID, State, Stage string }
	if err := json.Unmarshal([]byte(out), &jobs); err != nil || len(jobs) != 1 || jobs[0].State != "failed" || jobs[0].Stage != "plan" {
		t.Fatalf("journal after the failed decode: %s (%v)", out, err)
	}
	os.Remove(pngPath)
	if _, errs, code = runCmd(t, "", "decode", jobs[0].ID, "--mem-budget", "1GiB", "--home", homeDir); code != 0 {
		t.Fatalf("retry of the failed job: code %d, stderr %q", code, errs)
	}
	checkPNG(t, pngPath, filepath.Join(gold, "astronaut.recon.png"))

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"wrong file size", []string{"vae", "decode", "-m", dec, lat, "--shape", "32,32,33", "-o", pngPath, "--no-journal"}, "load: latents"},
		{"no shape, no description", []string{"vae", "decode", "-m", dec, filepath.Join(gold, "astronaut.recon.f32"), "-o", pngPath, "--no-journal"}, "give --shape"},
		{"encoder as decoder", []string{"vae", "decode", "-m", enc, lat, "--shape", "32,32,32", "-o", pngPath, "--no-journal"}, "missing weight \"1.weight\""},
		{"bad channels", []string{"vae", "decode", "-m", dec, lat, "--shape", "4,32,32", "-o", pngPath, "--no-journal"}, "32 channels"},
		{"over budget", []string{"vae", "decode", "-m", dec, lat, "--shape", "32,32,32", "-o", pngPath, "--no-journal", "--mem-budget", "20MiB"}, "plan: decoding 256x256 px needs"},
		{"not an image", []string{"vae", "encode", "-m", enc, lat, "-o", lat + ".x", "--no-journal"}, "PNG and JPEG"},
		{"encode over budget", []string{"vae", "encode", "-m", enc, filepath.Join(gold, "astronaut.input.png"), "-o", lat + ".x", "--no-journal", "--mem-budget", "10MiB"}, "plan: encode 256x256 px"},
		{"unknown job", []string{"decode", "jnope", "--home", homeDir}, "jnope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errs, code := runCmd(t, "", c.args...)
			if code == 0 || !strings.Contains(errs, c.want) {
				t.Fatalf("code %d, stderr %q, want %q", code, errs, c.want)
			}
		})
	}
}

// checkPNG compares a decoded PNG with the golden one (±1, ≤ 0.05% of
// samples) and checks its metadata.
func checkPNG(t *testing.T, path, goldPath string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	texts, err := imageio.ReadText(f)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{}
	for _, tx := range texts {
		keys[tx.Key] = tx.Value
	}
	var rec struct {
		ModelSHA256 string             `json:"model_sha256"`
		StagesMS    map[string]float64 `json:"stages_ms"`
	}
	if err := json.Unmarshal([]byte(keys[imageio.KeyJob]), &rec); err != nil || !strings.HasPrefix(rec.ModelSHA256, "0a44a31e") || rec.StagesMS["decode"] <= 0 {
		t.Errorf("job record %q: %v", keys[imageio.KeyJob], err)
	}
	if !strings.Contains(keys[imageio.KeyParameters], "Size: 256x256") {
		t.Errorf("parameters %q", keys[imageio.KeyParameters])
	}
	f.Seek(0, 0)
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.Open(goldPath)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	gimg, err := png.Decode(g)
	if err != nil {
		t.Fatal(err)
	}
	a, _, _ := imageio.Planar(img)
	b, _, _ := imageio.Planar(gimg)
	differ := 0
	for i := range a {
		d := math.Abs(float64(a[i]-b[i])) * 255
		if d > 1.01 {
			t.Fatalf("sample %d differs by %.0f", i, d)
		}
		if d > 0.5 {
			differ++
		}
	}
	if differ > len(a)/2000 {
		t.Fatalf("%d samples differ", differ)
	}
}
