package e2e

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/glassbox-ai/glassbox/api"
	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestVideoRestart: glassbox serve runs a native video job on the tiny
// Wan files, its MP4 is served again after a restart, and glassbox decode
// JOB remakes it in the job's folder from the saved latent.
func TestVideoRestart(t *testing.T) {
	sdtest.SkipGeneric(t, "a served video job (the VAE decodes the frames)")
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip(err)
	}
	dit, t5, vae := sdtest.Wan(t, "dit-tiny", 1001, tensor.F32), sdtest.Wan(t, "umt5-tiny", 4001, tensor.F32),
		sdtest.Wan(t, "vae", 2001, tensor.F32)
	home := t.TempDir()
	args := []string{"--home", home, "--model", t5, "--model", vae}
	s := serveFile(t, dit, args...)
	id := s.postJSON("/v1/jobs", `{"kind":"video","model":"`+filepath.Base(dit)+`","text_encoder":"`+filepath.Base(t5)+
		`","vae":"`+filepath.Base(vae)+`","prompt_ids":[17,201,33,1],"negative_prompt_ids":[9,9,1],"heads":4,`+
		`"frames":5,"width":32,"height":32,"steps":2,"seed":42}`)["id"].(string)
	if j := waitJob(t, s, id, func(j api.Job) bool { return api.Terminal(j.State) }); j.State != api.StateDone {
		t.Fatalf("job %s: %s %+v\n%s", id, j.State, j.Error, s.stderr())
	}
	before := getMP4(t, s.url+"/v1/jobs/"+id+"/video")
	s.stop(syscall.SIGTERM)

	s = serveFile(t, dit, args...)
	if after := getMP4(t, s.url+"/v1/jobs/"+id+"/video"); !bytes.Equal(after, before) {
		t.Errorf("the MP4 changed across the restart (%d → %d bytes)", len(before), len(after))
	}
	s.stop(syscall.SIGTERM)

	path := filepath.Join(home, "jobs", id, "video.mp4")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(binary(t), "decode", id, "--home", home).CombinedOutput()
	if err != nil {
		t.Fatalf("glassbox decode %s: %v\n%s", id, err, out)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 100 {
		t.Fatalf("decode wrote no %s: %v\n%s", path, err, out)
	}
}

func getMP4(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "video/mp4" || len(b) < 8 || string(b[4:8]) != "ftyp" {
		t.Fatalf("GET %s: %d %s, %d bytes", url, resp.StatusCode, resp.Header.Get("Content-Type"), len(b))
	}
	return b
}
