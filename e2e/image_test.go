package e2e

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// TestImageRestart: a finished image job's PNG is served after the server
// was killed and started again; a job killed in its sampling is marked
// interrupted in its stage; and glassbox decode JOB remakes a server
// job's image from its saved latents, pixel for pixel.
func TestImageRestart(t *testing.T) {
	sdtest.NeedMemory(t, 5<<30)
	ckpt := sdtest.SD15(t, "f16")
	home := t.TempDir()
	s := serveFile(t, ckpt, "--home", home)
	name := filepath.Base(ckpt)
	done := s.postJSON("/v1/jobs", `{"kind":"image","model":"`+name+`","prompt":"a lighthouse","width":64,"height":64,"steps":1,"cfg_scale":1,"seed":9}`)["id"].(string)
	first := waitJob(t, s, done, func(j api.Job) bool { return api.Terminal(j.State) })
	if first.State != api.StateDone {
		t.Fatalf("job %s: %s %+v\n%s", done, first.State, first.Error, s.stderr())
	}
	before := getPNG(t, s.url+"/v1/jobs/"+done+"/images/0")

	// A long job, killed once it samples.
	long := s.postJSON("/v1/jobs", `{"kind":"image","model":"`+name+`","prompt":"a lighthouse","width":64,"height":64,"steps":1000,"cfg_scale":1}`)["id"].(string)
	waitJob(t, s, long, func(j api.Job) bool { return j.Stage == "generate" || api.Terminal(j.State) })
	s.stop(syscall.SIGKILL)

	s = serveFile(t, ckpt, "--home", home)
	// The journal writes a batch at most 100 ms old, so a kill -9 may
	// lose the generate stage's start: the job is interrupted in generate
	// or in the stage before it.
	if j := s.job(long); j.State != api.StateFailed || (j.Stage != "generate" && j.Stage != "encode") || j.Error == nil ||
		!strings.Contains(j.Error.Message, "interrupted") {
		t.Errorf("the killed job after the restart: %s in %s, %+v", j.State, j.Stage, j.Error)
	}
	if after := getPNG(t, s.url+"/v1/jobs/"+done+"/images/0"); !bytes.Equal(after, before) {
		t.Errorf("the finished job's PNG changed across the restart (%d → %d bytes)", len(before), len(after))
	}
	s.stop(syscall.SIGTERM)

	// decode JOB remakes the image in the job's folder.
	path := filepath.Join(home, "jobs", done, "image.png")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), "decode", done, "--home", home).CombinedOutput()
	if err != nil {
		t.Fatalf("glassbox decode %s: %v\n%s", done, err, out)
	}
	again, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("decode wrote no %s: %v\n%s", path, err, out)
	}
	if a, b := pixelsOf(t, before), pixelsOf(t, again); !bytes.Equal(a, b) {
		t.Error("decode JOB's pixels differ from the job's")
	}
}

func waitJob(t *testing.T, s *server, id string, cond func(api.Job) bool) api.Job {
	t.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		j := s.job(id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s: still %s in %s", id, j.State, j.Stage)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getPNG(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return b
}

// pixelsOf is a PNG's pixels, 8-bit RGBA.
func pixelsOf(t *testing.T, b []byte) []byte {
	t.Helper()
	im, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	r := im.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := im.At(x, y)
			cr, cg, cb, ca := c.RGBA()
			out = append(out, byte(cr>>8), byte(cg>>8), byte(cb>>8), byte(ca>>8))
		}
	}
	return append(out, []byte(fmt.Sprint(r))...)
}
