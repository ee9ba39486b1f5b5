package video

import (
	"testing"

	"github.com/glassbox-ai/glassbox/internal/sdtest"
	"github.com/glassbox-ai/glassbox/tensor"
)

// TestInspect tells the tiny Wan files apart by their tensors.
func TestInspect(t *testing.T) {
	for _, c := range []struct {
		kind string
		seed uint64
		want string
	}{{"dit-tiny", 1001, "model"}, {"umt5-tiny", 4001, "text_encoder"}, {"vae", 2001, "vae"}} {
		fi, err := Inspect(sdtest.Wan(t, c.kind, c.seed, tensor.F32))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Component != c.want || fi.Params <= 0 || fi.DTypes != "F32" {
			t.Errorf("%s: component %q (%s), %d params %s; want %q", c.kind, fi.Component, fi.Family, fi.Params, fi.DTypes, c.want)
		}
	}
}
