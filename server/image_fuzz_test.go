package server

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzImageFields: the image requests' parsers (size, base64 pictures,
// A1111 sampler names, the image and video jobs' unknown-field checks)
// never panic, and what they
// accept is what they say.
func FuzzImageFields(f *testing.F) {
	for _, s := range []string{"512x512", "auto", "64x", "x64", "-1x5", "data:image/png;base64,iVBORw0KGgo=", "DPM++ 2M Karras",
		"Euler a", `{"kind":"image","negativ_prompt":1}`, `{"a":{"b":[1,2]}}`, "k_euler_a", "9999999999999999999x1",
		`{"kind":"video","num_frames":5,"t5":"x"}`} {
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
		checkVideoFields([]byte(s))
	})
}

// FuzzWSRead: the WebSocket reader takes any bytes from a client without
// panicking or reading past a frame's bound, and ends when they end.
func FuzzWSRead(f *testing.F) {
	f.Add([]byte{0x89, 0x80, 1, 2, 3, 4})                // a masked empty ping
	f.Add([]byte{0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8})    // a close, 1000
	f.Add([]byte{0x81, 0xfe, 0xff, 0xff, 0, 0, 0, 0})    // a long text frame's header
	f.Add([]byte{0x81, 0x05, 'h', 'e', 'l', 'l', 'o'})   // unmasked: refused
	f.Add([]byte{0x82, 0xff, 0, 0, 0, 0, 0, 0, 0, 0xff}) // a 64-bit length
	f.Fuzz(func(t *testing.T, b []byte) {
		server, client := net.Pipe()
		ws := &wsConn{c: server, br: bufio.NewReader(bytes.NewReader(b)), closed: make(chan struct{}), timeout: time.Second}
		go io.Copy(io.Discard, client) // what the server answers
		ws.read()
		<-ws.closed
		server.Close()
		client.Close()
	})
}
