// Command glassbox is the command-line interface of the glassbox runtime.
//
// Each subcommand lives in its own file (cmd_NAME.go) and registers itself
// in init; this file only dispatches. Subcommands parse flags into config
// structs and call library packages: there is no logic here.
package main

//go:generate go test -run ^TestCLIReference$ -update .

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

	// help, when set, receives a command's flags instead of -h printing
	// them (docs/CLI.md is made this way).
	help func(fs *flag.FlagSet, usage string)
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

// runMain runs one command line and returns the exit code: 0, 1 for a
// failure (printed as one readable line), 2 for a command line glassbox
// cannot take. Help that was asked for goes to stdout, and a command line's
// mistake to stderr.
func runMain(ctx context.Context, env *cmdEnv, args []string) int {
	if len(args) == 0 {
		printCommands(env.stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) == 1 {
			printCommands(env.stdout)
			return 0
		}
		// glassbox help CMD [SUB]: the command's own -h, all of it on stdout.
		c, ok := commands[args[1]]
		if !ok {
			fmt.Fprintf(env.stderr, "glassbox help: unknown command %q; see glassbox help\n", args[1])
			return 2
		}
		help := *env
		help.stderr = env.stdout
		if err := c.run(ctx, &help, append(args[2:len(args):len(args)], "-h")); err != nil && !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(env.stderr, "glassbox help %s: %s\n", c.name, oneLine(err.Error()))
			return 2
		}
		return 0
	case "-version", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(env.stderr, "glassbox: unknown command %q\n\n", name)
		printCommands(env.stderr)
		return 2
	}
	err := c.run(ctx, env, args[1:])
	var bad *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &bad):
		fmt.Fprintf(env.stderr, "glassbox %s: %s\n", bad.cmd, oneLine(bad.Error()))
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
	fmt.Fprintln(w, "\nRun 'glassbox help COMMAND' (or 'glassbox COMMAND -h') for a command's flags;")
	fmt.Fprintln(w, "docs/CLI.md has them all.")
}
