// Command glassbox is the command-line interface of the glassbox runtime.
//
// Each subcommand lives in its own file (cmd_NAME.go) and registers itself
// in init; this file only dispatches. Subcommands parse flags into config
// structs and call library packages: there is no logic here.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
)

// command is one subcommand.
type command struct {
	name    string
	summary string // one line for the command list
	run     func(ctx context.Context, env *cmdEnv, args []string) error
}

// cmdEnv carries the process's streams, so tests can run commands in-process.
type cmdEnv struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("glassbox: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// errUsage marks an error whose usage text was already printed.
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, &cmdEnv{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

// runMain runs one command line and returns the exit code. Errors are
// printed as one readable line.
func runMain(ctx context.Context, env *cmdEnv, args []string) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printCommands(env.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(env.stderr, "glassbox: unknown command %q\n\n", args[0])
		printCommands(env.stderr)
		return 2
	}
	err := c.run(ctx, env, args[1:])
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	}
	fmt.Fprintf(env.stderr, "glassbox %s: %s\n", c.name, oneLine(err.Error()))
	return 1
}

func oneLine(s string) string { return strings.ReplaceAll(strings.TrimSpace(s), "\n", "; ") }

func printCommands(w io.Writer) {
	fmt.Fprintln(w, "glassbox: a local generative-AI runtime where every stage is visible.")
	fmt.Fprintln(w, "\nUsage: glassbox COMMAND [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-14s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'glassbox COMMAND -h' for a command's flags.")
}

// newFlags returns a flag set that reports errors instead of exiting.
func newFlags(env *cmdEnv, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	fs.Usage = func() {
		fmt.Fprintf(env.stderr, "Usage: glassbox %s %s\n\nFlags:\n", name, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args, allowing flags after positional arguments
// (glassbox run PROMPT -n 10), and maps flag errors to errUsage.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
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
