package e2e

import (
	"bufio"
	"encoding/base64"
	bin "encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/internal/sdtest"
)

// TestComfyUIOpenWebUI runs ComfyUI's API as Open WebUI calls it against
// the real binary on the random-weight SD 1.5 checkpoint: /object_info for
// the checkpoints, /ws?clientId= opened, the default workflow posted to
// /prompt, the socket followed to executing with node null, then
// /history/{id} and /view for the PNG.
func TestComfyUIOpenWebUI(t *testing.T) {
	sdtest.NeedMemory(t, 5<<30)
	ckpt := sdtest.SD15(t, "f16")
	s := serveFile(t, ckpt)
	name := filepath.Base(ckpt)

	var info map[string]struct {
		Input struct {
			Required map[string][]json.RawMessage `json:"required"`
		} `json:"input"`
	}
	getJSON(t, s.url+"/object_info", &info)
	var ckpts []string
	json.Unmarshal(info["CheckpointLoaderSimple"].Input.Required["ckpt_name"][0], &ckpts)
	if len(ckpts) != 1 || ckpts[0] != name {
		t.Fatalf("object_info's checkpoints: %v", ckpts)
	}

	conn, br := dialWS(t, s.url, "/ws?clientId=owui")
	graph := fmt.Sprintf(`{"3":{"class_type":"KSampler","inputs":{"cfg":8,"denoise":1,"latent_image":["5",0],"model":["4",0],
		"negative":["7",0],"positive":["6",0],"sampler_name":"euler","scheduler":"normal","seed":42,"steps":1}},
		"4":{"class_type":"CheckpointLoaderSimple","inputs":{"ckpt_name":%q}},
		"5":{"class_type":"EmptyLatentImage","inputs":{"batch_size":1,"height":64,"width":64}},
		"6":{"class_type":"CLIPTextEncode","inputs":{"clip":["4",1],"text":"a lighthouse"}},
		"7":{"class_type":"CLIPTextEncode","inputs":{"clip":["4",1],"text":""}},
		"8":{"class_type":"VAEDecode","inputs":{"samples":["3",0],"vae":["4",2]}},
		"9":{"class_type":"SaveImage","inputs":{"filename_prefix":"ComfyUI","images":["8",0]}}}`, name)
	id := s.postJSON("/prompt", `{"prompt":`+graph+`,"client_id":"owui"}`)["prompt_id"].(string)
	var seen []string
	for done := false; !done; {
		op, p := readFrame(t, conn, br, func() string {
			return fmt.Sprintf("socket messages so far: %v\nqueue: %s\nserver stderr:\n%s", seen, getText(s.url+"/queue"), s.stderr())
		})
		if op != 1 {
			continue // a preview
		}
		var m struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		json.Unmarshal(p, &m)
		seen = append(seen, m.Type)
		switch {
		case m.Type == "execution_error":
			t.Fatalf("execution_error: %s\n%s", p, s.stderr())
		case m.Type == "executing" && m.Data["node"] == nil && m.Data["prompt_id"] == id:
			done = true
		}
	}
	if got := strings.Join(seen, " "); !strings.HasPrefix(got, "status execution_start execution_cached executing") ||
		!strings.Contains(got, "progress") || !strings.HasSuffix(got, "executed execution_success executing") {
		t.Errorf("socket messages: %s", got)
	}
	var hist map[string]struct {
		Outputs map[string]struct {
			Images []struct{ Filename, Subfolder, Type string } `json:"images"`
		} `json:"outputs"`
		Status struct {
			StatusStr string `json:"status_str"`
		} `json:"status"`
	}
	getJSON(t, s.url+"/history/"+id, &hist)
	h := hist[id]
	if h.Status.StatusStr != "success" || len(h.Outputs["9"].Images) != 1 {
		t.Fatalf("history: %+v", hist)
	}
	im := h.Outputs["9"].Images[0]
	b := getPNG(t, fmt.Sprintf("%s/view?filename=%s&subfolder=%s&type=%s", s.url, im.Filename, im.Subfolder, im.Type))
	if px := pixelsOf(t, b); len(px) < 64*64*4 {
		t.Errorf("the image has %d bytes of pixels", len(px))
	}
}

// getText returns url's body, or the error, for a failure message.
func getText(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return string(b)
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || json.Unmarshal(b, v) != nil {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
}

// dialWS opens a WebSocket (RFC 6455) without a library: the handshake.
func dialWS(t *testing.T, url, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	host := strings.TrimPrefix(url, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	key := base64.StdEncoding.EncodeToString([]byte("glassbox-e2e-key"))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n", path, host, key)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("WebSocket handshake: %v %v", err, resp)
	}
	return c, br
}

// readFrame reads one server frame (unmasked, unfragmented). The read
// deadline only keeps a hung server from hanging the test (a 64×64 job
// takes seconds); state says what the job had done when it fails.
func readFrame(t *testing.T, c net.Conn, br *bufio.Reader, state func() string) (byte, []byte) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Minute))
	var h [2]byte
	if _, err := io.ReadFull(br, h[:]); err != nil {
		t.Fatalf("reading the socket: %v\n%s", err, state())
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(br, b[:])
		n = uint64(bin.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(br, b[:])
		n = bin.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(br, p); err != nil {
		t.Fatal(err)
	}
	return h[0] & 0x0f, p
}
