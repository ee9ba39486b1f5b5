package video

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/vae"
)

// FindFFmpeg returns the ffmpeg executable: path if given, else "ffmpeg"
// in PATH; the error says it is missing.
func FindFFmpeg(path string) (string, error) {
	if path == "" {
		path = "ffmpeg"
	}
	p, err := exec.LookPath(path)
	if err != nil {
		return "", fmt.Errorf("ffmpeg (the MP4's H.264 encoder) was not found: %w", err)
	}
	return p, nil
}

// FrameU8 converts a planar RGB frame [3][h][w] in [-1, 1] to interleaved
// 8-bit RGB as Wan's cache_video does (wan/utils/utils.py): clamped to
// [-1, 1], (v + 1)/2·255 in float32, truncated toward zero.
func FrameU8(dst []byte, rgb []float32, h, w int) {
	n := h * w
	for c := range 3 {
		for i := range n {
			v := min(max(rgb[c*n+i], -1), 1)
			dst[3*i+c] = uint8((v + 1) / 2 * 255)
		}
	}
}

// FramePath is frame k's PNG in dir.
func FramePath(dir string, k int) string { return filepath.Join(dir, fmt.Sprintf("frame_%03d.png", k)) }

// encoder is an ffmpeg subprocess reading raw RGB frames on its stdin.
type encoder struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	stderr bytes.Buffer
	tmp    string
	out    string
}

// FFmpegArgs is the command line that encodes raw rgb24 frames of w×h at
// fps from stdin into an H.264 yuv420p MP4 at out, with comment as the
// file's "comment" metadata tag.
func FFmpegArgs(w, h, fps int, comment, out string) []string {
	return []string{"-hide_banner", "-loglevel", "error", "-y",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-s", fmt.Sprintf("%dx%d", w, h), "-r", strconv.Itoa(fps), "-i", "-",
		"-c:v", "libx264", "-pix_fmt", "yuv420p", "-metadata", "comment=" + comment,
		"-movflags", "+faststart+use_metadata_tags", "-f", "mp4", out}
}

// Settings is the request's generation settings as JSON, without paths:
// what the MP4's comment tag carries.
func Settings(r *Request) string {
	b, _ := json.Marshal(struct {
		Prompt      string  `json:"prompt,omitempty"`
		Negative    string  `json:"negative_prompt,omitempty"`
		PromptIDs   []int32 `json:"prompt_ids,omitempty"`
		NegativeIDs []int32 `json:"negative_prompt_ids,omitempty"`
		Frames      int     `json:"frames"`
		Width       int     `json:"width"`
		Height      int     `json:"height"`
		Steps       int     `json:"steps"`
		CFGScale    float32 `json:"cfg_scale"`
		Shift       float64 `json:"shift"`
		Sampler     string  `json:"sampler"`
		Seed        int64   `json:"seed"`
		RNG         string  `json:"rng"`
		FPS         int     `json:"fps"`
		DiT         string  `json:"dit"`
	}{r.Prompt, r.Negative, r.PromptIDs, r.NegativeIDs, r.Frames, r.Width, r.Height, r.Steps, r.CFGScale, r.Shift, r.Sampler, r.Seed, r.RNG, r.FPS, filepath.Base(r.DiT)})
	return string(b)
}

func startEncoder(ffmpeg string, w, h, fps int, comment, out string) (*encoder, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	e := &encoder{out: out, tmp: filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".part")}
	e.cmd = exec.Command(ffmpeg, FFmpegArgs(w, h, fps, comment, e.tmp)...)
	e.cmd.Stderr = &e.stderr
	var err error
	if e.in, err = e.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("ffmpeg: %w", err)
	}
	return e, nil
}

// write hands one frame to ffmpeg.
func (e *encoder) write(b []byte) error {
	if _, err := e.in.Write(b); err != nil {
		e.in.Close()
		werr := e.cmd.Wait()
		return fmt.Errorf("ffmpeg stopped reading frames (%v): %s", werr, e.message())
	}
	return nil
}

func (e *encoder) message() string {
	s := strings.TrimSpace(e.stderr.String())
	if s == "" {
		return "no message"
	}
	return s
}

// finish closes ffmpeg's input, waits for it and moves the MP4 into place.
func (e *encoder) finish() error {
	e.in.Close()
	if err := e.cmd.Wait(); err != nil {
		os.Remove(e.tmp)
		return fmt.Errorf("ffmpeg failed (%v): %s", err, e.message())
	}
	return os.Rename(e.tmp, e.out)
}

// abort stops ffmpeg and removes its partial output.
func (e *encoder) abort() {
	e.in.Close()
	if e.cmd.Process != nil {
		e.cmd.Process.Kill()
	}
	e.cmd.Wait()
	os.Remove(e.tmp)
}

// decode streams the VAE's frames into ffmpeg and the frames folder.
func (j *job) decode(ctx context.Context) (pipeline.StageStats, error) {
	r, l := j.r, j.lat
	h, w := 8*l.Height, 8*l.Width
	if j.ffmpeg != "" {
		var err error
		if j.mp4, err = startEncoder(j.ffmpeg, w, h, r.FPS, Settings(r), r.Out); err != nil {
			return pipeline.StageStats{}, pipeline.Wrap(pipeline.StageDeliver, err, "")
		}
	}
	if r.FramesDir != "" {
		if err := os.MkdirAll(r.FramesDir, 0o755); err != nil {
			return pipeline.StageStats{}, pipeline.Wrap(pipeline.StageDeliver, fmt.Errorf("frames folder: %w", err), "")
		}
	}
	buf := make([]byte, 3*h*w)
	var peak int64
	err := j.vae.DecodeFrames(ctx, j.pool, j.x, l.Frames, l.Height, l.Width, &peak, func(k int, rgb []float32) error {
		FrameU8(buf, rgb, h, w)
		if j.mp4 != nil {
			if err := j.mp4.write(buf); err != nil {
				return pipeline.Wrap(pipeline.StageDeliver, err, "")
			}
		}
		if r.FramesDir != "" {
			n, err := writeFramePNG(FramePath(r.FramesDir, k), buf, h, w)
			if err != nil {
				return pipeline.Wrap(pipeline.StageDeliver, fmt.Errorf("frame %d: %w", k, err), "")
			}
			j.written += n
		}
		j.frames = k + 1 // DecodeFrames reports the progress
		if j.tr != nil && j.tr.Preview != nil {
			pv, pw, ph, err := framePreview(buf, h, w)
			if err != nil {
				return pipeline.Wrap(pipeline.StageDecode, fmt.Errorf("frame %d's preview: %w", k, err), "")
			}
			j.tr.OnPreview(api.Preview{Step: r.Steps, Steps: r.Steps, Frame: k + 1, Frames: r.Frames, Width: pw, Height: ph, PNG: pv})
		}
		return nil
	})
	if err != nil {
		return pipeline.StageStats{}, err
	}
	return pipeline.StageStats{Items: int64(j.frames), Unit: "frames", Placement: placement(j.pool), PeakRSS: plan.PeakRSS(),
		Note: fmt.Sprintf("%d×%d, decode peak %s (planned %s)", w, h, plan.FormatBytes(peak), plan.FormatBytes(vae.WanDecodeBytes(l.Frames, l.Height, l.Width)))}, nil
}

// deliver closes the MP4 once ffmpeg has its last frame.
func (j *job) deliver(ctx context.Context) (pipeline.StageStats, error) {
	if e := j.mp4; e != nil {
		j.mp4 = nil
		if err := e.finish(); err != nil {
			return pipeline.StageStats{}, err
		}
		if st, err := os.Stat(j.r.Out); err == nil {
			j.written += st.Size()
		}
	}
	out := ""
	if j.ffmpeg != "" {
		out = j.r.Out
	}
	return pipeline.StageStats{Items: int64(j.frames), Unit: "frames", Bytes: j.written, Note: joinNonEmpty(", ", out, j.r.FramesDir)}, nil
}

// previewSide is the longest side of a frame's preview, in pixels.
const previewSide = 256

// framePreview is an interleaved RGB frame as a PNG of at most
// previewSide pixels a side: each pixel the mean of an f×f block (f the
// smallest whole factor that fits; 1: the frame itself).
func framePreview(rgb []byte, h, w int) ([]byte, int, int, error) {
	if len(rgb) != 3*h*w || h < 1 || w < 1 {
		return nil, 0, 0, fmt.Errorf("%d bytes for a %d×%d RGB frame", len(rgb), w, h)
	}
	f := (max(h, w) + previewSide - 1) / previewSide
	ph, pw := (h+f-1)/f, (w+f-1)/f
	img := image.NewNRGBA(image.Rect(0, 0, pw, ph))
	for y := range ph {
		for x := range pw {
			var sum [3]int
			n := 0
			for yy := y * f; yy < min(h, (y+1)*f); yy++ {
				for xx := x * f; xx < min(w, (x+1)*f); xx++ {
					i := 3 * (yy*w + xx)
					sum[0] += int(rgb[i])
					sum[1] += int(rgb[i+1])
					sum[2] += int(rgb[i+2])
					n++
				}
			}
			o := 4 * (y*pw + x)
			for c := range 3 {
				img.Pix[o+c] = uint8((sum[c] + n/2) / n)
			}
			img.Pix[o+3] = 255
		}
	}
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&b, img); err != nil {
		return nil, 0, 0, err
	}
	return b.Bytes(), pw, ph, nil
}

// writeFramePNG writes an interleaved RGB frame as an 8-bit RGB PNG.
func writeFramePNG(path string, rgb []byte, h, w int) (int64, error) {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range h * w {
		copy(img.Pix[4*i:4*i+3], rgb[3*i:3*i+3])
		img.Pix[4*i+3] = 255
	}
	return atomicfile.Write(path, 0o644, func(wr io.Writer) error {
		return (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(wr, img)
	})
}
