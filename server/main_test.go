package server

import (
	"testing"

	"github.com/glassbox-ai/glassbox/internal/testhome"
)

// TestMain gives the tests a glassbox home of their own: the server's
// default input folder (uploads) lives under it.
func TestMain(m *testing.M) { testhome.Main(m) }
