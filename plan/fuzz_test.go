package plan

import (
	"strings"
	"testing"
)

// FuzzParseDevice: any --device text gives a device or an error naming the
// problem, never a panic; a device it returns has RAM.
func FuzzParseDevice(f *testing.F) {
	for _, s := range []string{"rtx4090", "m2-16g,ram=8GiB", "vram=8GiB,bw=360GB/s,ram=32GiB", "ram=1e3GB", "cores=0", "unified=true,vram=1G,bw=1GB/s,ram=2G", ",,=", "h200,bw=-1TB/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if s == "" || s == "local" {
			return // this machine
		}
		d, err := ParseDevice(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "plan: ") {
				t.Errorf("error %q lacks the stage", err)
			}
			return
		}
		if d.RAMTotal <= 0 {
			t.Errorf("%q: device without RAM: %+v", s, d)
		}
	})
}

// FuzzParseBytes: sizes parse or fail, never panic or go negative.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"8GiB", "1.5 gb", "-1", "1e400", "NaNGB", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseBytes(s)
		if err == nil && n < 0 {
			t.Errorf("%q = %d", s, n)
		}
		if bw, err := ParseBandwidth(s); err == nil && !(bw > 0) {
			t.Errorf("bandwidth %q = %g", s, bw)
		}
	})
}
