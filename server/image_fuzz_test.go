package server

import (
	"strings"
	"testing"
)

// FuzzImageFields: the image requests' parsers (size, base64 pictures,
// A1111 sampler names, unknown-field checks) never panic, and what they
// accept is what they say.
func FuzzImageFields(f *testing.F) {
	for _, s := range []string{"512x512", "auto", "64x", "x64", "-1x5", "data:image/png;base64,iVBORw0KGgo=", "DPM++ 2M Karras",
		"Euler a", `{"kind":"image","negativ_prompt":1}`, `{"a":{"b":[1,2]}}`, "k_euler_a", "9999999999999999999x1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if w, h, e := parseSize(s); e == nil && (w < 0 || h < 0 || (w == 0) != (h == 0)) {
			t.Errorf("parseSize(%q) = %d, %d", s, w, h)
		}
		if b, e := decodeImageData(s, "image"); e == nil && b == nil && strings.TrimPrefix(s, "data:") == s && s != "" {
			t.Errorf("decodeImageData(%q): no bytes and no error", s)
		}
		if m, _, ok := a1111Sampler(s); ok && m == "" {
			t.Errorf("a1111Sampler(%q): ok with no sampler", s)
		}
		checkImageFields([]byte(s))
	})
}
