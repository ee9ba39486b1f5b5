package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
)

var update = flag.Bool("update", false, "rewrite docs/CLI.md from the flag definitions")

// subcommands are the commands whose flags belong to a second word.
var subcommands = map[string][]string{"vae": {"encode", "decode"}}

const cliDoc = "../../docs/CLI.md"

// TestCLIReference fails when docs/CLI.md is not what the flag definitions
// make; -update (or go generate ./cmd/glassbox) rewrites it.
func TestCLIReference(t *testing.T) {
	got := cliReference(t)
	if *update {
		if err := os.WriteFile(cliDoc, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatalf("%v (write it with: go generate ./cmd/glassbox)", err)
	}
	if string(want) != got {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			g, w := "", ""
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("docs/CLI.md is not current (regenerate it: go generate ./cmd/glassbox); line %d:\n file:  %q\n flags: %q", i+1, w, g)
			}
		}
	}
}

// cliReference renders every command's synopsis and flags as Markdown.
func cliReference(t *testing.T) string {
	var b strings.Builder
	b.WriteString("# glassbox command-line reference\n\n")
	b.WriteString("Every command and flag, generated from the flag definitions by `go generate ./cmd/glassbox`; a test\n")
	b.WriteString("fails when this file is not current. `glassbox help COMMAND` prints the same. What the commands are for:\n")
	b.WriteString("the [README](../README.md)'s tour and the guides beside this file.\n\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	b.WriteString("| command | what it does |\n|---|---|\n")
	for _, n := range names {
		fmt.Fprintf(&b, "| [`%s`](#glassbox-%s) | %s |\n", n, n, cell(commands[n].summary))
	}
	for _, n := range names {
		fmt.Fprintf(&b, "\n## glassbox %s\n\n%s.\n", n, commands[n].summary)
		if subs, ok := subcommands[n]; ok {
			for _, sub := range subs {
				fmt.Fprintf(&b, "\n### glassbox %s %s\n", n, sub)
				writeHelp(t, &b, n, sub, "-h")
			}
			continue
		}
		writeHelp(t, &b, n, "-h")
	}
	return b.String()
}

// writeHelp runs a command line that asks for help and writes its synopsis
// and a table of its flags.
func writeHelp(t *testing.T, b *strings.Builder, name string, args ...string) {
	var out bytes.Buffer
	var fs *flag.FlagSet
	var usage string
	env := &cmdEnv{stdin: strings.NewReader(""), stdout: &out, stderr: &out,
		help: func(f *flag.FlagSet, u string) { fs, usage = f, u }}
	if err := commands[name].run(context.Background(), env, args); err != nil && err != flag.ErrHelp {
		t.Fatalf("glassbox %s %s: %v", name, strings.Join(args, " "), err)
	}
	if fs == nil {
		t.Fatalf("glassbox %s %s printed %q, not its flags", name, strings.Join(args, " "), out.String())
	}
	fmt.Fprintf(b, "\n```\nglassbox %s %s\n```\n", fs.Name(), usage)
	rows := 0
	visitFlags(fs, func(f *flag.Flag, arg, def string) {
		if rows == 0 {
			b.WriteString("\n| flag | default | meaning |\n|---|---|---|\n")
		}
		rows++
		name := "-" + f.Name
		if arg != "" {
			name += " " + arg
		}
		_, text := flag.UnquoteUsage(f)
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, code(def), cell(text))
	})
}

// cell escapes text for a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;").Replace(s)
}

func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(s, "|", `\|`) + "`"
}

// quickStart returns the README's quick-start commands: the main job's
// arguments after "go run ./cmd/glassbox" and the test command.
func quickStart(t *testing.T) (main []string, tests string) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Quick start\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README.md has no sh block under ## Quick start")
	}
	for _, line := range strings.Split(block, "\n") {
		cmd, comment, _ := strings.Cut(line, " # ")
		cmd = strings.TrimSpace(cmd)
		switch strings.TrimSpace(comment) {
		case "the main job":
			words := shellWords(t, cmd)
			if len(words) < 3 || strings.Join(words[:3], " ") != "go run ./cmd/glassbox" {
				t.Fatalf("the main job %q does not start with go run ./cmd/glassbox", cmd)
			}
			main = words[3:]
		case "the whole test suite":
			tests = cmd
		}
	}
	if main == nil || tests == "" {
		t.Fatalf("README.md's quick start lacks '# the main job' or '# the whole test suite':\n%s", block)
	}
	return main, tests
}

// shellWords splits a command line as sh does for plain words and double
// or single quotes (all a README command uses).
func shellWords(t *testing.T, s string) []string {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unclosed quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}

// TestQuickStart runs the README's main job as it is written and checks it
// runs clean: it generates, and says nothing on stderr (no warning). The
// test command must be the one CI runs.
func TestQuickStart(t *testing.T) {
	args, tests := quickStart(t)
	for i, a := range args {
		if rel, ok := strings.CutPrefix(a, "../shared/"); ok {
			args[i] = shared.Path(t, rel)
		}
	}
	out, errOut, code := runCmd(t, "", append(args, "--no-journal")...)
	if code != 0 || strings.TrimSpace(out) == "" || errOut != "" {
		t.Errorf("glassbox %q: exit %d, stdout %q, stderr %q; want text and a silent stderr", args, code, out, errOut)
	}
	if tests != "go test ./..." {
		t.Errorf("the quick start's test command is %q; CI (.ci/run) runs go test ./...", tests)
	}
}

// TestDocLinks: every relative link of the README and docs/ leads to a
// file that exists, and a #glassbox-… anchor into docs/CLI.md to one of
// its headings.
func TestDocLinks(t *testing.T) {
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	cli, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{} // GitHub's: the heading's words, lower case, joined by -
	for _, line := range strings.Split(string(cli), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") {
			anchors[strings.ToLower(strings.ReplaceAll(h, " ", "-"))] = true
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target, anchor, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") || strings.HasPrefix(m[1], "mailto:") {
				continue
			}
			p := filepath.Join(filepath.Dir(f), target)
			if target == "" {
				p = f
			}
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s links to %s: %v", filepath.Base(f), m[1], err)
				continue
			}
			if filepath.Base(p) == "CLI.md" && anchor != "" && !anchors[anchor] {
				t.Errorf("%s links to %s: docs/CLI.md has no such heading", filepath.Base(f), m[1])
			}
		}
	}
}
