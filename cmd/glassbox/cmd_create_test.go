package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/store"
)

// TestCreateCommand: glassbox create makes a store model whose parameters
// and system message run applies where its own flags do not.
func TestCreateCommand(t *testing.T) {
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	src := shared.Path(t, "models/stories260K.gguf")
	if _, errs, code := runCmd(t, "", "import", src, "stories"); code != 0 {
		t.Fatal(errs)
	}
	mf := filepath.Join(t.TempDir(), "Modelfile")
	if err := os.WriteFile(mf, []byte("FROM stories\nPARAMETER temperature 0\nPARAMETER num_predict 12\nPARAMETER stop dragon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, st := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"create", "greedy", "-f", mf}, 0, "created greedy from stories"},
		{[]string{"create", "hot", "--from", "greedy", "--param", "temperature=1.5", "--system", "Tell tales."}, 0, "created hot from greedy"},
		{[]string{"create", "bad", "--from", "stories", "--param", "temperature=hot"}, 1, "parameters.temperature must be a number"},
		{[]string{"create", "bad", "--from", "nowhere"}, 1, "not a store model"},
		{[]string{"create", "greedy", "--from", "stories"}, 1, "already exists"},
		{[]string{"create", "x"}, 2, "either -f Modelfile or --from MODEL"},
	} {
		out, errs, code := runCmd(t, "", st.args...)
		if got := out + errs; code != st.code || !strings.Contains(got, st.out) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", st.args, code, out, errs, st.code, st.out)
		}
	}
	// greedy is greedy for 12 tokens: the base model's text with those flags.
	want, errs, code := runCmd(t, "", "run", "-m", "stories", "--temp", "0", "-n", "12", "--no-journal", "Once upon a time")
	if code != 0 {
		t.Fatal(errs)
	}
	got, errs, code := runCmd(t, "", "run", "-m", "greedy", "--no-journal", "Once upon a time")
	if code != 0 || got != want || want == "" {
		t.Errorf("run -m greedy: %q (%s), want the base's greedy %q", got, errs, want)
	}
	// A flag of the command line wins over the made model's parameter.
	longer, _, _ := runCmd(t, "", "run", "-m", "greedy", "-n", "20", "--no-journal", "Once upon a time")
	if !strings.HasPrefix(longer, strings.TrimRight(want, " ")) || len(longer) <= len(want) {
		t.Errorf("-n 20 over num_predict 12: %q, want more than %q", longer, want)
	}
	// hot keeps greedy's stop and length, with its own temperature and
	// system message.
	s, err := store.Default()
	if err != nil {
		t.Fatal(err)
	}
	hot, err := s.Get("hot")
	if err != nil || hot.System != "Tell tales." || hot.Parameters["temperature"] != 1.5 || hot.Parameters["num_predict"] != 12.0 ||
		hot.From != "greedy" || fmt.Sprint(hot.Parameters["stop"]) != "[dragon]" {
		t.Errorf("hot: %+v, %v", hot, err)
	}
}
