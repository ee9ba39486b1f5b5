package main

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/internal/shared"
)

// TestRunInteractive: 'run -i' answers each line, keeping the KV cache
// between turns (the second turn evaluates only what it adds), gives the
// first reply the one-shot --chat run gives, survives a turn that does
// not fit, and journals each turn as a chat job.
func TestRunInteractive(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	t.Setenv(home.Env, t.TempDir())
	flags := []string{"run", "-m", m, "--temp", "0", "-n", "12", "--ctx", "512", "--verbose"}
	out, errOut, code := runCmd(t, "Hello there\nTell me a story\n/bye\nnever read\n", append(flags, "-i")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	turns := strings.Split(out, ">>> ")
	if len(turns) != 4 || strings.TrimSpace(turns[1]) == "" || strings.TrimSpace(turns[2]) == "" || turns[3] != "" {
		t.Fatalf("stdout %q: want two replies, then the prompt /bye answered", out)
	}
	stats := regexp.MustCompile(`prompt (\d+) tokens, (\d+) from the KV cache`).FindAllStringSubmatch(errOut, -1)
	if len(stats) != 2 {
		t.Fatalf("stderr %q: want a stats line per turn", errOut)
	}
	p2, _ := strconv.Atoi(stats[1][1])
	c2, _ := strconv.Atoi(stats[1][2])
	if stats[0][2] != "0" || c2 == 0 || c2 >= p2 {
		t.Errorf("cached tokens: turn 1 %s, turn 2 %d of %d; want 0, then most of the first turn", stats[0][2], c2, p2)
	}
	one, errOne, code := runCmd(t, "", append(flags, "--chat", "Hello there")...)
	if code != 0 {
		t.Fatalf("one-shot: exit %d: %s", code, errOne)
	}
	if strings.TrimSuffix(turns[1], "\n") != one {
		t.Errorf("first reply %q, the one-shot --chat run %q", turns[1], one)
	}
	jobs, _, _ := runCmd(t, "", "jobs")
	if n := strings.Count(jobs, " chat "); n != 2 {
		t.Errorf("jobs lists %d chat jobs, want 2:\n%s", n, jobs)
	}

	// A message that does not fit is dropped with the reason; the chat goes on.
	long := strings.Repeat("word ", 200)
	out, errOut, code = runCmd(t, long+"\nHi\n", "run", "-m", m, "--temp", "0", "-n", "4", "--ctx", "64", "-i", "--no-journal")
	if code != 0 || !strings.Contains(errOut, "the context holds 64") || !strings.Contains(errOut, "/clear") || strings.Count(out, ">>> ") != 3 {
		t.Errorf("too long a message: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	// A reasoning model: its thinking is shown, the answer (none here: the
	// template opened the block and 6 tokens do not close it) goes to the
	// history.
	r1 := shared.WithChatTemplate(t, "models/stories260K.gguf", shared.R1Template, "r1")
	out, errOut, code = runCmd(t, "Once upon a time\n", "run", "-m", r1, "--temp", "0", "-n", "6", "-i", "--no-journal")
	if code != 0 || len(strings.TrimSpace(strings.TrimPrefix(out, ">>> "))) < 6 {
		t.Errorf("thinking model: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, code = runCmd(t, "", "run", "-m", m, "-i", "--json"); code == 0 || !strings.Contains(errOut, "--json") {
		t.Errorf("-i --json: exit %d, %q", code, errOut)
	}
}

// TestRunStdinNotTerminal: with no prompt and a standard input that is not
// a terminal — /dev/null, a character device — run reads the prompt from it
// and generates; it does not enter the interactive chat.
func TestRunStdinNotTerminal(t *testing.T) {
	m := shared.Path(t, "models/stories260K.gguf")
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), &cmdEnv{stdin: null, stdout: &out, stderr: &errb},
		[]string{"run", "-m", m, "--temp", "0", "-n", "5", "--no-journal"})
	if code != 0 || out.Len() == 0 || strings.Contains(out.String()+errb.String(), ">>>") || strings.Contains(errb.String(), "Chatting with") {
		t.Errorf("run < %s: exit %d, stdout %q, stderr %q; want 5 generated tokens, no chat", os.DevNull, code, out.String(), errb.String())
	}
}
