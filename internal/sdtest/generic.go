package sdtest

import (
	"os"
	"testing"
)

// SkipGeneric skips a test that runs whole diffusion networks when the
// kernels are their generic Go twins (-tags purego, or GLASSBOX_NOASM=1):
// there a 256² UNet call takes minutes, and the twins are checked against
// the assembly by each kernel package's own tests, so the goldens run once,
// on the fast kernels. what says which test is skipped.
func SkipGeneric(t testing.TB, what string) {
	t.Helper()
	if generic || os.Getenv("GLASSBOX_NOASM") == "1" {
		t.Skipf("%s: the generic kernels (-tags purego) are too slow for whole networks; their twins are tested against the assembly in compute/conv and kernel", what)
	}
}
