package checkpoint

import (
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// TestSD15Rand opens the real sd15-rand checkpoint, detects SD 1.x and
// counts its components as the golden README does. (The F32 file differs
// only in dtype, which TestMixedDTypes covers; making it costs 4.3 GB.)
func TestSD15Rand(t *testing.T) {
	for _, v := range []struct {
		variant  string
		bytesPer int64
	}{{"f16", 2}} {
		t.Run(v.variant, func(t *testing.T) {
			path := sdtest.SD15(t, v.variant)
			start := time.Now()
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			opened := time.Since(start)
			start = time.Now()
			c, err := SD1Components(f, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("open %v, detect and components %v: %v", opened, time.Since(start), c.Detection)
			checkCounts(t, c, v.bytesPer)
			if c.EMA.Tensors != 0 || c.Other.Tensors != 0 || c.Detection.ContextDim != 768 || c.Detection.LatentChannels != 4 {
				t.Errorf("EMA %d, other %d, detection %+v", c.EMA.Tensors, c.Other.Tensors, c.Detection)
			}
			// Every tensor of the VAE binds through the view with a shape.
			b := NewBinder(c.VAE.Source)
			for _, n := range c.VAE.Source.Names() {
				tt, _ := c.VAE.Source.Tensor(n)
				b.Raw(n, tt.Shape...)
			}
			if b.Err() != nil || len(b.Unused()) != 0 {
				t.Errorf("binding the VAE: %v, unused %v", b.Err(), b.Unused())
			}
		})
	}
}
