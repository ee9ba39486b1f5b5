//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sdtest

// lock does nothing where flock is missing: two test binaries may then
// both generate the file, each under its own temporary name, and the last
// rename wins (the files are identical).
func lock(string) (func(), error) { return func() {}, nil }

// freeDisk is unknown here: SD15 tries and fails on a full disk instead.
var freeDisk = freeDiskOS

func freeDiskOS(string) (int64, bool) { return 0, false }
