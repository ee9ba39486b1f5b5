package main

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/server"
)

// TestHelpAndUsage: help that is asked for goes to stdout and exits 0; a
// command line glassbox cannot take is one line on stderr and exit 2.
func TestHelpAndUsage(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		code      int
		stdout    string // a substring ("" : stdout must be empty)
		stderr    string // exactly, when not "*"
		stderrHas string
	}{
		{args: []string{"help"}, stdout: "Commands:\n  bench"},
		{args: []string{"--help"}, stdout: "Commands:"},
		{args: []string{"-h"}, stdout: "Commands:"},
		{args: []string{"help", "run"}, stdout: "Usage: glassbox run -m MODEL"},
		{args: []string{"help", "run"}, stdout: "  -temp float\n    \ttemperature (0: greedy) (default 0.8)\n"},
		{args: []string{"run", "-h"}, stdout: "Usage: glassbox run -m MODEL"},
		{args: []string{"run", "--help"}, stdout: "Usage: glassbox run -m MODEL"},
		{args: []string{"run", "-n", "5", "-h", "--bogus"}, stdout: "Usage: glassbox run"}, // help wins over what follows
		{args: []string{"help", "plan"}, stdout: "Usage: glassbox plan"},
		{args: []string{"help", "vae"}, stdout: "Usage: glassbox vae encode"},
		{args: []string{"help", "vae", "decode"}, stdout: "Usage: glassbox vae decode"},
		{args: []string{}, code: 2, stderr: "*", stderrHas: "Commands:"},
		{args: []string{"help", "nope"}, code: 2, stderr: "glassbox help: unknown command \"nope\"; see glassbox help\n"},
		{args: []string{"nope"}, code: 2, stderr: "*", stderrHas: "unknown command \"nope\""},
		{args: []string{"run", "-n", "abc"}, code: 2,
			stderr: "glassbox run: invalid value \"abc\" for flag -n: parse error; see glassbox run --help\n"},
		{args: []string{"run", "--bogus", "x"}, code: 2,
			stderr: "glassbox run: flag provided but not defined: -bogus; see glassbox run --help\n"},
		{args: []string{"plan", "--ctx", "many"}, code: 2,
			stderr: "glassbox plan: invalid value \"many\" for flag -ctx: parse error; see glassbox plan --help\n"},
		{args: []string{"vae", "decode", "--tile", "x"}, code: 2,
			stderr: "glassbox vae decode: invalid value \"x\" for flag -tile: parse error; see glassbox vae decode --help\n"},
		{args: []string{"import"}, code: 2, stderr: "*", stderrHas: "Usage: glassbox import PATH"}, // a missing argument: the usage, on stderr
	} {
		out, errOut, code := runCmd(t, "", tc.args...)
		bad := code != tc.code
		if tc.stdout == "" {
			bad = bad || out != ""
		} else {
			bad = bad || !strings.Contains(out, tc.stdout)
		}
		if tc.stderr != "*" {
			bad = bad || errOut != tc.stderr
		}
		bad = bad || !strings.Contains(errOut, tc.stderrHas)
		if bad {
			t.Errorf("glassbox %q: exit %d, stdout %q, stderr %q; want exit %d, stdout with %q, stderr %q %q",
				tc.args, code, out, errOut, tc.code, tc.stdout, tc.stderr, tc.stderrHas)
		}
	}
}

// TestVersion: glassbox version and --version print one line with the Go
// version this binary was built with.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errOut, code := runCmd(t, "", args...)
		if code != 0 || errOut != "" || !strings.HasPrefix(out, "glassbox ") || !strings.Contains(out, runtime.Version()) || strings.Count(out, "\n") != 1 {
			t.Errorf("glassbox %s: exit %d, stdout %q, stderr %q", args[0], code, out, errOut)
		}
	}
}

func TestVersionLine(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	stamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.1"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "4256b2e1a2b3c4d5e6f708192a3b4c5d6e7f8091"},
		{Key: "vcs.time", Value: "2026-12-02T15:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	saved := server.Version
	defer func() { server.Version = saved }()
	server.Version = "0.1.0"
	for _, tc := range []struct {
		name, linked string
		bi           *debug.BuildInfo
		want         string
	}{
		{"no build info", "", nil, "glassbox 0.1.0 (" + runtime.Version() + " " + platform + ")"},
		{"a devel build", "", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "glassbox 0.1.0 (go1.26.0 " + platform + ")"},
		{"a module version", "", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.1"}}, "glassbox v0.3.1 (go1.26.0 " + platform + ")"},
		{"stamped from a checkout", "", stamped, "glassbox v0.3.1 (commit 4256b2e1a2b3, 2026-12-02T15:00:00Z, modified; go1.26.0 " + platform + ")"},
		{"the linker's version wins", "v1.0.0", stamped, "glassbox v1.0.0 (commit 4256b2e1a2b3, 2026-12-02T15:00:00Z, modified; go1.26.0 " + platform + ")"},
	} {
		if got := versionLine(tc.linked, tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestVersionLinked: a binary built with -X main.version says that version.
func TestVersionLinked(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "glassbox")
	build := exec.Command("go", "build", "-ldflags=-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil || !strings.HasPrefix(string(out), "glassbox v9.8.7-test (") {
		t.Errorf("glassbox --version: %q, %v", out, err)
	}
}
