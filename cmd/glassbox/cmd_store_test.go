package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

func TestStoreCommands(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	src := shared.Path(t, "models/stories260K.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/models/o/r":
			w.Write([]byte(`{"siblings":[{"rfilename":"m-Q4_K_M.gguf"}]}`))
		case "/o/r/resolve/main/m-Q4_K_M.gguf":
			http.ServeContent(w, r, "m-Q4_K_M.gguf", time.Time{}, bytes.NewReader(data))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	t.Setenv("GLASSBOX_HF_ENDPOINT", srv.URL)

	steps := []struct {
		args []string
		code int
		out  string // substring of stdout (or stderr when code != 0)
	}{
		{[]string{"list"}, 0, "no models in"},
		{[]string{"import", src, "tiny"}, 0, "imported tiny (1.1 MiB, sha256 047bf46455a54493"},
		{[]string{"pull", "hf.co/o/r"}, 0, "pulled m-Q4_K_M (1.1 MiB"},
		{[]string{"list"}, 0, "m-Q4_K_M"},
		{[]string{"show", "-m", "tiny"}, 0, "layers                 5"},
		{[]string{"pull", "hf.co/o/missing"}, 1, "HTTP 404"},
		{[]string{"plan", "-m", "hf.co/o/r", "--no-calibration"}, 0, "fits"},
		{[]string{"plan", "-m", "hf.co/o/r:Q8_0"}, 1, `no .gguf file matches "Q8_0"`},
		{[]string{"rm", "tiny"}, 0, "removed tiny"},
		{[]string{"show", "-m", "tiny"}, 1, `load: model "tiny": no such model in the store`},
		{[]string{"import"}, 2, "Usage: glassbox import"},
	}
	for _, st := range steps {
		out, errs, code := runCmd(t, "", st.args...)
		got := out
		if code != 0 {
			got = errs
		}
		if code != st.code || !strings.Contains(got, st.out) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", st.args, code, out, errs, st.code, st.out)
		}
	}
}
