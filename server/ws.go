package server

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// A server-side WebSocket (RFC 6455) for ComfyUI's /ws: the opening
// handshake (§4.2.2: Sec-WebSocket-Accept is base64 of the SHA-1 of the
// key and the protocol's GUID), unmasked frames from the server (§5.2),
// and a reader that answers pings and notices the client's close, its
// frames' payloads unmasked and otherwise ignored.

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// WebSocket opcodes (§5.2).
const (
	wsText   = 0x1
	wsBinary = 0x2
	wsClose  = 0x8
	wsPing   = 0x9
	wsPong   = 0xA
)

// wsMaxFrame bounds a client frame: a ComfyUI client sends none but
// pings and closes.
const wsMaxFrame = 1 << 16

type wsConn struct {
	c       net.Conn
	br      *bufio.Reader
	mu      sync.Mutex // serializes writes
	timeout time.Duration
	closed  chan struct{} // closed when the client closes or the read fails
}

// wsUpgrade answers the opening handshake and takes the connection over.
func wsUpgrade(w http.ResponseWriter, r *http.Request, timeout time.Duration) (*wsConn, error) {
	key := r.Header.Get("Sec-WebSocket-Key")
	if r.Method != http.MethodGet || !headerHas(r.Header, "Connection", "upgrade") || !headerHas(r.Header, "Upgrade", "websocket") ||
		key == "" || r.Header.Get("Sec-WebSocket-Version") != "13" {
		return nil, errors.New("deliver: a WebSocket handshake (Upgrade: websocket, Sec-WebSocket-Version 13, a key) is required")
	}
	h := sha1.Sum([]byte(key + wsGUID))
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Time{})
	resp := "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " +
		base64.StdEncoding.EncodeToString(h[:]) + "\r\n\r\n"
	ws := &wsConn{c: c, br: brw.Reader, timeout: timeout, closed: make(chan struct{})}
	if err := ws.write(func() error { _, err := io.WriteString(c, resp); return err }); err != nil {
		c.Close()
		return nil, err
	}
	go ws.read()
	return ws, nil
}

func headerHas(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

func (ws *wsConn) write(fn func() error) error {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.timeout > 0 {
		ws.c.SetWriteDeadline(time.Now().Add(ws.timeout))
	}
	return fn()
}

// send writes one unfragmented frame.
func (ws *wsConn) send(op byte, payload []byte) error {
	hdr := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		hdr = append(hdr, byte(n))
	case n <= 0xffff:
		hdr = append(hdr, 126, byte(n>>8), byte(n))
	default:
		hdr = append(hdr, 127)
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(n))
	}
	return ws.write(func() error {
		if _, err := ws.c.Write(hdr); err != nil {
			return err
		}
		_, err := ws.c.Write(payload)
		return err
	})
}

// read reads the client's frames until it closes, answering pings.
func (ws *wsConn) read() {
	defer close(ws.closed)
	for {
		var h [2]byte
		if _, err := io.ReadFull(ws.br, h[:]); err != nil {
			return
		}
		op, masked, n := h[0]&0x0f, h[1]&0x80 != 0, uint64(h[1]&0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(ws.br, b[:]); err != nil {
				return
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(ws.br, b[:]); err != nil {
				return
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if !masked || n > wsMaxFrame {
			ws.send(wsClose, []byte{0x03, 0xea}) // 1002: protocol error (§7.4.1)
			return
		}
		var mask [4]byte
		if _, err := io.ReadFull(ws.br, mask[:]); err != nil {
			return
		}
		payload := make([]byte, n)
		if _, err := io.ReadFull(ws.br, payload); err != nil {
			return
		}
		for i := range payload {
			payload[i] ^= mask[i%4]
		}
		switch op {
		case wsClose:
			ws.send(wsClose, payload[:min(len(payload), 2)])
			return
		case wsPing:
			ws.send(wsPong, payload)
		}
	}
}

func (ws *wsConn) Close() error { return ws.c.Close() }
