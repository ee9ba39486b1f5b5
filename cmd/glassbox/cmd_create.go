package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/store"
)

func init() {
	register(&command{name: "create", summary: "make a model from another: the same weights with a system message and default parameters (Ollama's create, a Modelfile)", run: runCreate})
	register(&command{name: "cp", summary: "store a model again under another name (a hard link; as 'ollama cp')", run: runCp})
}

// runCp is glassbox cp SRC DST: a create with nothing of its own, so DST
// keeps SRC's system message and parameters.
func runCp(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "cp", "SRC DST")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		fs.Usage()
		return errUsage
	}
	return runCreate(ctx, env, []string{"--from", pos[0], pos[1]})
}

// runCreate is glassbox create: a store model made from another, as
// Ollama's create makes one from a Modelfile (FROM, SYSTEM, PARAMETER,
// LICENSE), or from flags.
func runCreate(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "create", "NAME (-f Modelfile | --from MODEL [--system TEXT] [--param NAME=VALUE]...)")
	file := fs.String("f", "", "a Modelfile (FROM, SYSTEM, PARAMETER, LICENSE)")
	from := fs.String("from", "", "the model to make it from: a store name or a GGUF file (imported)")
	system := fs.String("system", "", "the system message of conversations that bring none")
	license := fs.String("license", "", "license text to keep with the model")
	var params stringList
	fs.Var(&params, "param", "a default parameter, NAME=VALUE in Ollama's names (temperature=0.7, num_ctx=8192, stop=TEXT; repeatable)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || (*file == "") == (*from == "") {
		fmt.Fprintln(env.stderr, "glassbox create: give NAME, and either -f Modelfile or --from MODEL")
		fs.Usage()
		return errUsage
	}
	// Flags become a Modelfile, so both ways are read by one parser.
	text := ""
	if *file != "" {
		b, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		text = string(b)
	} else {
		var b strings.Builder
		fmt.Fprintf(&b, "FROM %s\n", *from)
		if *system != "" {
			fmt.Fprintf(&b, "SYSTEM \"\"\"%s\"\"\"\n", *system)
		}
		for _, p := range params {
			k, v, ok := strings.Cut(p, "=")
			if !ok || k == "" {
				return fmt.Errorf("create: --param %q: want NAME=VALUE", p)
			}
			fmt.Fprintf(&b, "PARAMETER %s %s\n", k, v)
		}
		if *license != "" {
			fmt.Fprintf(&b, "LICENSE \"\"\"%s\"\"\"\n", *license)
		}
		text = b.String()
	}
	req, e := server.ParseModelfile(text)
	if e != nil {
		return fmt.Errorf("create: %s", e.Message)
	}
	if e := server.CheckParameters(req.Parameters); e != nil {
		return fmt.Errorf("create: %s", e.Message)
	}
	s, err := store.Default()
	if err != nil {
		return err
	}
	base, err := s.Find(req.From)
	if err != nil {
		// A GGUF file: relative to the Modelfile, as Ollama reads FROM.
		path := req.From
		if *file != "" && !filepath.IsAbs(path) {
			path = filepath.Join(filepath.Dir(*file), path)
		}
		if _, serr := os.Stat(path); serr != nil {
			return fmt.Errorf("create: FROM %s: not a store model (see 'glassbox list') nor a file", req.From)
		}
		base = store.Entry{Name: path, Path: path}
	}
	p := store.Profile{System: req.System, Parameters: req.Parameters, License: req.License}.Over(base.Profile)
	e2, err := s.Create(pos[0], base.Name, base.Path, base.SHA256, base.Bytes, p)
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	fmt.Fprintf(env.stdout, "created %s from %s (%s, sha256 %s)\n", e2.Name, e2.From, humanBytes(e2.Bytes), e2.SHA256)
	return nil
}

// runProfileFlags are glassbox run's flags for Ollama's parameter names.
var runProfileFlags = map[string]string{
	"temperature": "temp", "top_k": "top-k", "top_p": "top-p", "min_p": "min-p", "repeat_penalty": "repeat-penalty",
	"repeat_last_n": "repeat-last-n", "frequency_penalty": "frequency-penalty", "presence_penalty": "presence-penalty",
	"seed": "seed", "num_predict": "n", "num_ctx": "ctx", "num_batch": "batch", "num_thread": "threads", "stop": "stop",
}

// applyProfile gives run the parameters and system message of a store
// model made with 'glassbox create' (or Ollama's /api/create), for the
// flags the command line did not set. A parameter run has no flag for is
// reported, not dropped in silence.
func applyProfile(env *cmdEnv, fs *flag.FlagSet, f *runFlags) error {
	if f.model == "" {
		return nil
	}
	if _, err := os.Stat(f.model); err == nil {
		return nil // a file, not a store name
	}
	s, err := store.Default()
	if err != nil {
		return nil
	}
	e, err := s.Find(f.model)
	if err != nil || !e.HasProfile() {
		return nil // an unknown name fails where it is loaded
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for k, v := range e.Parameters {
		name, ok := runProfileFlags[k]
		if !ok {
			fmt.Fprintf(env.stderr, "glassbox run: model %s's parameter %s has no run flag; it is not applied\n", e.Name, k)
			continue
		}
		if set[name] || (name == "n" && set["max-tokens"]) {
			continue
		}
		vs, many := v.([]any)
		if !many {
			vs = []any{v}
		}
		for _, x := range vs {
			text := fmt.Sprint(x)
			if f, ok := x.(float64); ok {
				text = strconv.FormatFloat(f, 'f', -1, 64)
			}
			if err := fs.Set(name, text); err != nil {
				return fmt.Errorf("load: model %s's parameter %s %v: %w", e.Name, k, x, err)
			}
		}
	}
	if f.system == "" {
		f.system = e.System
	}
	return nil
}
