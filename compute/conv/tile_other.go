//go:build !amd64 || purego

package conv

func pickTile() tileFuncs { return genericTiles }

// tileImpls lists every micro-kernel set this build can run, for tests.
func tileImpls() map[string]tileFuncs { return map[string]tileFuncs{"generic": genericTiles} }

func kernelName() string { return "generic" }
