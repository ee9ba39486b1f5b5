//go:build !amd64 || purego

package kernel

func available() []Impl { return []Impl{Generic} }

func init() { fillDotTables() }
