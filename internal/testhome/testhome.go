// Package testhome gives a test binary a glassbox home of its own, so that
// no test writes into the user's real ~/.glassbox (its journal, model store,
// calibration history and kernel caches).
//
// A package whose tests can reach the home — they import, directly or not,
// internal/home, or they start processes (the glassbox binary) — calls Main
// from its TestMain:
//
//	func TestMain(m *testing.M) { testhome.Main(m) }
//
// or Run, when its TestMain does more. Main sets $GLASSBOX_HOME to a new
// temporary folder before any test runs (child processes inherit it) and
// removes the folder when the tests end. The package's own test pins the
// rule: it fails for a package that should call Main and does not.
//
// Imports: internal/home and the standard library.
package testhome

import (
	"fmt"
	"os"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/home"
)

// Main runs the tests in a temporary glassbox home and exits with their
// code.
func Main(m *testing.M) { os.Exit(Run(m)) }

// Run runs the tests in a temporary glassbox home and returns their exit
// code. A test may still point $GLASSBOX_HOME elsewhere with t.Setenv.
func Run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "glassbox-test-home-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "testhome: a temporary glassbox home: %v\n", err)
		return 1
	}
	prev, had := os.LookupEnv(home.Env)
	os.Setenv(home.Env, dir)
	code := m.Run()
	if had {
		os.Setenv(home.Env, prev)
	} else {
		os.Unsetenv(home.Env)
	}
	os.RemoveAll(dir)
	return code
}
