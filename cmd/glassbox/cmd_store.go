package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/glassbox-ai/glassbox/backend"
	"github.com/glassbox-ai/glassbox/internal/term"
	"github.com/glassbox-ai/glassbox/store"
)

func init() {
	register(&command{name: "import", summary: "add a GGUF file to the model store (hard link or copy)", run: runImport})
	register(&command{name: "list", summary: "list the models in the store", run: runList})
	register(&command{name: "rm", summary: "remove a model from the store", run: runRm})
	register(&command{name: "pull", summary: "download a model (URL, hf.co/OWNER/REPO[:FILE-or-QUANT] or a name of Ollama's registry) into the store", run: runPull})
}

func runImport(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "import", "PATH [NAME]")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) < 1 || len(pos) > 2 {
		fs.Usage()
		return errUsage
	}
	s, err := store.Default()
	if err != nil {
		return err
	}
	name := ""
	if len(pos) == 2 {
		name = pos[1]
	}
	e, err := s.Import(pos[0], name)
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "imported %s (%s, sha256 %s)\n", e.Name, humanBytes(e.Bytes), e.SHA256)
	return nil
}

func runList(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "list", "[--json]")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	s, err := store.Default()
	if err != nil {
		return err
	}
	list, err := s.List()
	if err != nil {
		return err
	}
	if *asJSON {
		if list == nil {
			list = []store.Entry{}
		}
		return json.NewEncoder(env.stdout).Encode(list)
	}
	if len(list) == 0 {
		fmt.Fprintf(env.stdout, "no models in %s (add one with 'glassbox import PATH' or 'glassbox pull REF')\n", s.Dir)
		return nil
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tSHA256\tADDED\tFROM")
	for _, e := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, humanBytes(e.Bytes), e.SHA256[:12], e.Added.Local().Format(time.DateTime), e.From)
	}
	return tw.Flush()
}

func runRm(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "rm", "NAME...")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fs.Usage()
		return errUsage
	}
	s, err := store.Default()
	if err != nil {
		return err
	}
	for _, n := range pos {
		if err := s.Remove(n); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "removed %s\n", n)
	}
	return nil
}

func runPull(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "pull", "URL|hf.co/OWNER/REPO[:FILE-or-QUANT]|NAME[:TAG] (Ollama's registry) [--name NAME]")
	name := fs.String("name", "", "store name (default: the file name without .gguf)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errUsage
	}
	s, err := store.Default()
	if err != nil {
		return err
	}
	e, err := pullInto(ctx, env, s, pos[0], *name, "glassbox pull")
	if err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "pulled %s (%s, sha256 %s)\n", e.Name, humanBytes(e.Bytes), e.SHA256)
	return nil
}

// pullInto downloads ref into s with a progress bar on stderr, and keeps
// of its profile what run and serve can apply (the rest is reported
// under cmd's name).
func pullInto(ctx context.Context, env *cmdEnv, s *store.Store, ref, name, cmd string) (store.Entry, error) {
	bar := newProgress(env.stderr, isTerminal(env.stderr))
	e, err := s.Pull(ctx, ref, store.PullOptions{
		Name:     name,
		Progress: bar.update,
		Logf:     func(format string, a ...any) { fmt.Fprintf(env.stderr, format+"\n", a...) },
		Contact:  announcer(env, cmd),
	})
	bar.finish()
	if err != nil {
		return e, err
	}
	return backend.KeepRunnable(s, e, func(m string) { fmt.Fprintln(env.stderr, cmd+": "+m) })
}

// progress draws a bar on a terminal, or prints a plain line every 10%
// (and at most every 2 s) elsewhere.
type progress struct {
	w        io.Writer
	tty      bool
	start    time.Time
	lastDraw time.Time
	lastPct  int
	drawn    bool
}

func newProgress(w io.Writer, tty bool) *progress {
	return &progress{w: w, tty: tty, start: time.Now(), lastPct: -1}
}

func (p *progress) update(done, total int64) {
	now := time.Now()
	rate := float64(done) / max(now.Sub(p.start).Seconds(), 1e-3)
	pct := -1
	if total > 0 {
		pct = int(done * 100 / total)
	}
	if p.tty {
		if now.Sub(p.lastDraw) < 100*time.Millisecond && done != total {
			return
		}
		p.lastDraw, p.drawn = now, true
		const width = 30
		fill := 0
		if pct >= 0 {
			fill = pct * width / 100
		}
		fmt.Fprintf(p.w, "\r[%s%s] %3d%% %s / %s  %s/s ", strings.Repeat("#", fill), strings.Repeat(" ", width-fill), max(pct, 0), humanBytes(done), humanBytes(total), humanBytes(int64(rate)))
		return
	}
	if pct/10 == p.lastPct/10 && now.Sub(p.lastDraw) < 2*time.Second {
		return
	}
	if pct/10 == p.lastPct/10 {
		return
	}
	p.lastPct, p.lastDraw = pct, now
	fmt.Fprintf(p.w, "downloaded %s of %s (%d%%), %s/s\n", humanBytes(done), humanBytes(total), pct, humanBytes(int64(rate)))
}

func (p *progress) finish() {
	if p.tty && p.drawn {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether stream (stdin, stdout) is a terminal; a
// character device that is not one (/dev/null) is not.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(f)
}

// announcer returns a function that says on stderr, once per host, that
// cmd is about to contact it.
func announcer(env *cmdEnv, cmd string) func(host string) {
	said := map[string]bool{}
	return func(host string) {
		if !said[host] {
			said[host] = true
			fmt.Fprintf(env.stderr, "%s: contacting %s\n", cmd, host)
		}
	}
}
