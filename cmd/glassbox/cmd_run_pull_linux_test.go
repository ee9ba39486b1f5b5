package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

// openPTY opens a new pseudo-terminal: the master side (what a terminal
// emulator holds) and the terminal a program reads and writes.
func openPTY(t *testing.T) (master, tty *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals: %v", err)
	}
	var n int
	rc, _ := master.SyscallConn()
	rc.Control(func(fd uintptr) { // Control keeps the master non-blocking, so Close ends a Read
		if err = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); err == nil {
			n, err = unix.IoctlGetInt(int(fd), unix.TIOCGPTN)
		}
	})
	if err != nil {
		master.Close()
		t.Skipf("pseudo-terminal: %v", err)
	}
	tty, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Skipf("pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { tty.Close(); master.Close() })
	return master, tty
}

// runOnTerminal runs a command line with stdin and stderr on a terminal
// whose user types typed, and returns stdout, what the terminal showed
// and the exit code.
func runOnTerminal(t *testing.T, typed string, args ...string) (string, string, int) {
	t.Helper()
	master, tty := openPTY(t)
	if _, err := master.WriteString(typed); err != nil {
		t.Fatal(err)
	}
	shown := make(chan string)
	go func() {
		var b bytes.Buffer
		io.Copy(&b, master) // until the terminal is closed (EIO)
		shown <- b.String()
	}()
	var out bytes.Buffer
	code := runMain(context.Background(), &cmdEnv{stdin: tty, stdout: &out, stderr: tty}, args)
	tty.Close()
	return out.String(), <-shown, code
}

// TestRunAsksOnTerminal: on a terminal, a -m the store lacks is a question,
// and only a yes downloads it.
func TestRunAsksOnTerminal(t *testing.T) {
	src := shared.Path(t, "models/stories260K.gguf")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	reg := shared.OllamaRegistry(t, map[string][]shared.Layer{"library/stories:q8": {{MediaType: "application/vnd.ollama.image.model", Data: data}}})
	t.Setenv("GLASSBOX_OLLAMA_REGISTRY", reg.URL)
	t.Setenv("GLASSBOX_HOME", t.TempDir())
	run := []string{"run", "-m", "stories:q8", "--temp", "0", "-n", "5", "--no-journal", "Once upon a time"}
	question := fmt.Sprintf(`glassbox run: model "stories:q8" is not in the store. Download it from %s as stories:q8? [y/N] `, reg.URL)

	out, shown, code := runOnTerminal(t, "n\n", run...)
	if code != 1 || out != "" || !strings.Contains(shown, question) || !strings.Contains(shown, "its download was declined") || strings.Contains(shown, "contacting") {
		t.Errorf("answered n: exit %d, stdout %q, terminal %q", code, out, shown)
	}
	out, shown, code = runOnTerminal(t, "\n", run...)
	if code != 1 || !strings.Contains(shown, "declined") {
		t.Errorf("answered nothing (the default is no): exit %d, terminal %q", code, shown)
	}
	want, _, _ := runCmd(t, "", "run", "-m", src, "--temp", "0", "-n", "5", "--no-journal", "Once upon a time")
	out, shown, code = runOnTerminal(t, "y\n", run...)
	if code != 0 || out != want || !strings.Contains(shown, question) || !strings.Contains(shown, "contacting "+strings.TrimPrefix(reg.URL, "http://")) ||
		!strings.Contains(shown, "pulled stories:q8") {
		t.Errorf("answered y: exit %d, stdout %q (want %q), terminal %q", code, out, want, shown)
	}
}
