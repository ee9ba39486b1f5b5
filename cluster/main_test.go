package cluster

import (
	"testing"

	"github.com/glassbox-ai/glassbox/internal/testhome"
)

// TestMain runs the tests in a glassbox home of their own
// (internal/testhome), never the user's ~/.glassbox.
func TestMain(m *testing.M) { testhome.Main(m) }
