package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/store"
)

// pullMissing handles a -m that names a model of Ollama's registry the
// store does not hold. Nothing is downloaded unless asked for: with --pull
// it is pulled (as 'ollama run' does); on a terminal the user is asked
// first; otherwise — a script, a pipe, a typo — run fails naming the
// store's nearest names and how to pull. The registry's host is said on
// stderr before it is contacted. -m then names what the pull stored
// (USER/NAME:TAG is stored as USER-NAME:TAG). With --no-pull, the store's
// own error stands.
func pullMissing(ctx context.Context, env *cmdEnv, f *runFlags) error {
	if f.model == "" || !store.IsOllamaName(f.model) || strings.HasSuffix(f.model, ".gguf") {
		return nil // a path mistyped is not a name to ask a registry for
	}
	if _, err := os.Stat(f.model); err == nil {
		return nil // a file
	}
	s, err := store.Default()
	if err != nil {
		return nil // the load names the problem
	}
	if _, err := s.Find(f.model); err == nil {
		return nil
	}
	name, err := store.OllamaStoreName(f.model)
	if err != nil {
		return nil
	}
	if _, err := s.Find(name); err == nil {
		f.model = name
		return nil
	}
	if f.pull && f.noPull {
		return fmt.Errorf("load: --pull and --no-pull contradict each other")
	}
	if f.noPull {
		return nil
	}
	registry := store.OllamaRegistryOf(f.model)
	if !f.pull {
		missing := fmt.Sprintf("model %q is not in the store", f.model)
		if near := nearestNames(s, f.model); near != "" {
			missing += " (" + near + ")"
		}
		if !isTerminal(env.stdin) || !isTerminal(env.stderr) {
			return pipeline.Wrap(pipeline.StageLoad, fmt.Errorf("%s, and nothing is downloaded unasked", missing),
				fmt.Sprintf("check the name ('glassbox list'), or download it from %s as %s with --pull or 'glassbox pull %s'", registry, name, f.model))
		}
		fmt.Fprintf(env.stderr, "glassbox run: %s. Download it from %s as %s? [y/N] ", missing, registry, name)
		if answer := readLine(env.stdin); answer != "y" && answer != "yes" {
			return pipeline.Wrap(pipeline.StageLoad, fmt.Errorf("%s, and its download was declined", missing), "")
		}
	}
	fmt.Fprintf(env.stderr, "glassbox run: %s is not in the store: pulling it from %s as %s\n", f.model, registry, name)
	e, err := pullInto(ctx, env, s, f.model, "", "glassbox run")
	if err != nil {
		return pipeline.Wrap(pipeline.StageLoad, fmt.Errorf("model %q is not in the store, and pulling it failed: %w", f.model, err),
			"check the name (see 'glassbox list') and the network, or give a file with -m PATH")
	}
	fmt.Fprintf(env.stderr, "glassbox run: pulled %s (%s, sha256 %s)\n", e.Name, humanBytes(e.Bytes), e.SHA256)
	f.model = e.Name
	return nil
}

// nearestNames is "nearest: a, b" for the store's names closest to name,
// or "".
func nearestNames(s *store.Store, name string) string {
	if near := s.Nearest(name); len(near) > 0 {
		return "nearest: " + strings.Join(near, ", ")
	}
	return ""
}

// readLine reads one answer from a terminal, a byte at a time so that
// nothing after the line is taken from what reads it next (an interactive
// chat); it is lower-cased and trimmed.
func readLine(r io.Reader) string {
	var line []byte
	b := make([]byte, 1)
	for len(line) < 256 {
		n, err := r.Read(b)
		if n == 1 {
			if b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		if err != nil {
			break
		}
	}
	return strings.ToLower(strings.TrimSpace(string(line)))
}
