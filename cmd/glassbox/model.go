package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
)

// resolveModel turns a -m argument (a file path or a model-store name) into
// a file path.
func resolveModel(arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("load: no model given (use -m PATH or -m NAME from 'glassbox list')")
	}
	if _, err := os.Stat(arg); err == nil {
		return arg, nil
	}
	if strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".gguf") {
		return "", fmt.Errorf("load: model %q: no such file", arg)
	}
	return resolveStoreName(arg)
}

// resolveStoreName is replaced by the model store; until then names fail.
var resolveStoreName = func(name string) (string, error) {
	return "", fmt.Errorf("load: model %q: no such file", name)
}

// openModel resolves and opens a GGUF model.
func openModel(arg string) (*gguf.File, error) {
	path, err := resolveModel(arg)
	if err != nil {
		return nil, err
	}
	return gguf.Open(path)
}
