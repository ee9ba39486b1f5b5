package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestVideo runs the tiny Wan files through glassbox video: a frame count
// that is not 4n+1 is refused in stage plan with the nearest valid ones and
// journaled as failed; a one-step run writes the PNG frames (and the MP4
// when ffmpeg is here).
func TestVideo(t *testing.T) {
	sdtest.SkipGeneric(t, "glassbox video on the tiny Wan models")
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	files := []string{"video", "--dit", sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), "--t5", sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		"--vae", sdtest.Wan(t, "vae", 2001, tensor.F32), "--heads", "4", "--prompt-ids", "17 201 33 1", "--negative-prompt-ids", "9 9 1",
		"-W", "32", "-H", "32", "--home", home}
	_, errs, code := runCmd(t, "", append(files, "--frames", "6", "-o", filepath.Join(dir, "a.mp4"))...)
	if code == 0 || !strings.Contains(errs, "plan:") || !strings.Contains(errs, "5") || !strings.Contains(errs, "9") {
		t.Fatalf("code %d, stderr %q: want a plan error naming 5 and 9 frames", code, errs)
	}
	out, _, _ := runCmd(t, "", "jobs", "--home", home)
	if !strings.Contains(out, "video") || !strings.Contains(out, "failed") {
		t.Errorf("jobs:\n%s", out)
	}
	frames := filepath.Join(dir, "frames")
	mp4 := filepath.Join(dir, "b.mp4")
	stdout, errs, code := runCmd(t, "", append(files, "--frames", "5", "--steps", "1", "--frames-dir", frames, "-o", mp4)...)
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		if code != 0 || !strings.Contains(errs, "no MP4") {
			t.Fatalf("without ffmpeg: code %d, stderr %q", code, errs)
		}
	} else if code != 0 || !strings.Contains(stdout, mp4+": 5 frames, seed 42") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, stdout, errs)
	} else if _, err := os.Stat(mp4); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"frame_000.png", "frame_004.png"} {
		if _, err := os.Stat(filepath.Join(frames, name)); err != nil {
			t.Error(err)
		}
	}

	// glassbox decode JOB: the saved latent decoded again as a new job.
	out, _, _ = runCmd(t, "", "jobs", "--home", home)
	id := ""
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 5 && f[3] == "video" && strings.Contains(line, " done ") {
			id = f[0]
		}
	}
	if id == "" {
		t.Fatalf("no finished video job in:\n%s", out)
	}
	stdout, errs, code = runCmd(t, "", "decode", id, "--home", home, "-o", filepath.Join(dir, "c.mp4"))
	if code != 0 || !strings.Contains(stdout, ": 5 frames, seed 42") || !strings.Contains(errs, "decoding the latent of job "+id) {
		t.Fatalf("decode %s: code %d, stdout %q, stderr %q", id, code, stdout, errs)
	}
}

// TestVideoFlags: --rng names the noise's generator (one that is not cpu
// or cuda is refused in stage plan naming the two); --round-frames makes
// 6 frames 5 with a warning.
func TestVideoFlags(t *testing.T) {
	sdtest.SkipGeneric(t, "glassbox video on the tiny Wan models")
	dir := t.TempDir()
	files := []string{"video", "--dit", sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), "--t5", sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		"--vae", sdtest.Wan(t, "vae", 2001, tensor.F32), "--heads", "4", "--prompt-ids", "17 201 33 1", "--cfg-scale", "1",
		"-W", "32", "-H", "32", "--steps", "1", "--home", filepath.Join(dir, "home")}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string // in stdout and stderr
	}{
		{"cuda", []string{"--frames", "5", "--rng", "cuda"}, 0, []string{": 5 frames, seed 42"}},
		{"philox", []string{"--frames", "5", "--rng", "philox"}, 1, []string{`plan: rng "philox": want one of cuda, cpu`}},
		{"round", []string{"--frames", "6", "--round-frames"}, 0, []string{": 5 frames, seed 42", "6 video frames are not 4n + 1 (nearest: 5 or 9): rounded to 5"}},
		{"no round", []string{"--frames", "6"}, 1, []string{"nearest: 5 or 9"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, tc.name)
			stdout, errs, code := runCmd(t, "", append(append(files, tc.args...), "--frames-dir", out, "-o", out+".mp4")...)
			for _, w := range tc.want {
				if code != tc.code || !strings.Contains(stdout+errs, w) {
					t.Errorf("%v: code %d, stdout %q, stderr %q; want code %d and %q", tc.args, code, stdout, errs, tc.code, w)
				}
			}
		})
	}
}
