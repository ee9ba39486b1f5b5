// Package term tells whether a file is an interactive terminal, as the
// kernel's terminal driver knows it: a file is one when the terminal
// attribute request (termios' tcgetattr, ioctl TCGETS on Linux, TIOCGETA on
// the BSDs and macOS; GetConsoleMode on Windows) succeeds on it. A file
// mode's character-device bit is not enough: /dev/null and /dev/zero are
// character devices and not terminals.
//
// Imports: golang.org/x/sys and the standard library.
package term

import "os"

// IsTerminal reports whether f is a terminal. A nil file is not.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	return isTerminal(f.Fd())
}
