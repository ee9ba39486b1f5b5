package main

import (
	"os"
	"testing"
)

// TestGenerated checks that kernel/x16_amd64.s is this program's output:
// edit the generator (or its prelude), then run go generate in kernel/.
func TestGenerated(t *testing.T) {
	have, err := os.ReadFile("../../x16_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if string(have) != generate() {
		t.Fatal("kernel/x16_amd64.s differs from x16gen's output: run 'go generate ./kernel/'")
	}
}
