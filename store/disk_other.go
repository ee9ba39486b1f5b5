//go:build !unix && !windows

package store

func freeBytes(dir string) (int64, bool) { return 0, false }

func diskError(err error) error { return err }
