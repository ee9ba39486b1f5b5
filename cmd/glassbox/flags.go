package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// usageError is a command line its command cannot take: a flag it does
// not know, a value a flag cannot hold. It is printed as one line that
// points at the command's help, not with the whole usage.
type usageError struct {
	cmd string // "run", "vae decode"
	err error
}

func (e *usageError) Error() string {
	return fmt.Sprintf("%v; see glassbox %s --help", e.err, e.cmd)
}

// helpFlag is -h and -help: asked for, the command's help goes to
// standard output (glassbox run -h | less), and parsing stops there.
type helpFlag struct {
	env   *cmdEnv
	usage string // the synopsis after "glassbox NAME"
	asked bool
}

var errHelpAsked = errors.New("help requested")

func (h *helpFlag) String() string   { return "" }
func (h *helpFlag) IsBoolFlag() bool { return true }
func (h *helpFlag) Set(string) error { h.asked = true; return errHelpAsked }

// newFlags returns a flag set that reports errors instead of exiting.
// Its Usage (called by a command for arguments it cannot take) prints the
// synopsis and the flags on stderr.
func newFlags(env *cmdEnv, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	h := &helpFlag{env: env, usage: usage}
	fs.Var(h, "h", "show this help")
	fs.Var(h, "help", "show this help")
	fs.SetOutput(env.stderr)
	fs.Usage = func() { printUsage(fs.Output(), fs, usage) }
	return fs
}

// parseFlags parses args, allowing flags after positional arguments
// (glassbox run PROMPT -n 10). -h prints the help on stdout and returns
// flag.ErrHelp; a flag error is a *usageError.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	out, usage := fs.Output(), fs.Usage
	fs.SetOutput(io.Discard) // the flag package's own messages and usage are not printed
	fs.Usage = func() {}
	defer func() { fs.SetOutput(out); fs.Usage = usage }()
	var pos []string
	for {
		err := fs.Parse(args)
		if h, ok := fs.Lookup("h").Value.(*helpFlag); ok && h.asked {
			if h.env.help != nil {
				h.env.help(fs, h.usage)
			} else {
				printUsage(h.env.stdout, fs, h.usage)
			}
			return nil, flag.ErrHelp
		}
		if err != nil {
			return nil, &usageError{cmd: fs.Name(), err: err}
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// printUsage writes a command's synopsis and flags.
func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprintf(w, "Usage: glassbox %s %s\n\nFlags:\n", fs.Name(), usage)
	visitFlags(fs, func(f *flag.Flag, arg, def string) {
		line := "  -" + f.Name
		if arg != "" {
			line += " " + arg
		}
		_, text := flag.UnquoteUsage(f)
		if def != "" {
			text += " (default " + def + ")"
		}
		fmt.Fprintf(w, "%s\n    \t%s\n", line, strings.ReplaceAll(text, "\n", "\n    \t"))
	})
}

// visitFlags calls fn for each flag but -h/-help, in name order, with the
// name of its argument (none for a switch) and its default as the flag
// package prints it ("" for a zero value).
func visitFlags(fs *flag.FlagSet, fn func(f *flag.Flag, arg, def string)) {
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := f.Value.(*helpFlag); ok {
			return
		}
		arg, _ := flag.UnquoteUsage(f)
		def := f.DefValue
		switch {
		case def == "" || def == "0" || def == "false" || def == "[]":
			def = ""
		case arg == "string":
			def = fmt.Sprintf("%q", def)
		}
		fn(f, arg, def)
	})
}
