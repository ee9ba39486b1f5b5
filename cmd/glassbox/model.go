package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/store"
)

// resolveModel turns a -m argument (a file path or a model-store name: a
// name, or the reference it was pulled by) into a file path.
func resolveModel(arg string) (string, error) {
	if arg == "" {
		return "", fmt.Errorf("load: no model given (use -m PATH or -m NAME from 'glassbox list')")
	}
	if _, err := os.Stat(arg); err == nil {
		return arg, nil
	}
	pathLike := strings.ContainsAny(arg, `/\`) || strings.HasSuffix(arg, ".gguf")
	if strings.HasSuffix(arg, ".gguf") || pathLike && !store.IsRef(arg) && !store.IsOllamaName(arg) {
		return "", fmt.Errorf("load: model %q: no such file", arg)
	}
	s, err := store.Default()
	if err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	p, err := s.Resolve(arg)
	if errors.Is(err, store.ErrNotFound) {
		if near := nearestNames(s, arg); near != "" {
			err = fmt.Errorf("%w; %s", err, near)
		}
	}
	if err != nil && pathLike {
		return "", fmt.Errorf("load: no file %q, and %w", arg, err)
	}
	if err != nil {
		return "", fmt.Errorf("load: %w", err)
	}
	return p, nil
}

// openModel resolves and opens a GGUF model.
func openModel(arg string) (*gguf.File, error) {
	path, err := resolveModel(arg)
	if err != nil {
		return nil, err
	}
	return gguf.Open(path)
}
