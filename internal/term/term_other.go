//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || windows)

package term

// isTerminal is false where the terminal attributes cannot be asked for:
// glassbox then behaves as it does with a pipe (no interactive chat unless
// asked for with -i, no colours, plain progress lines).
func isTerminal(fd uintptr) bool { return false }
