package server

import (
	"bufio"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// comfyDefault is ComfyUI's default txt2img workflow in its API format,
// the one Open WebUI sends (with its own prompt, size, seed and steps).
func comfyDefault(ckpt, sampler string) map[string]any {
	return map[string]any{
		"3": map[string]any{"class_type": "KSampler", "inputs": map[string]any{"cfg": 8, "denoise": 1, "latent_image": []any{"5", 0},
			"model": []any{"4", 0}, "negative": []any{"7", 0}, "positive": []any{"6", 0}, "sampler_name": sampler, "scheduler": "normal",
			"seed": 8566257, "steps": 3}},
		"4": map[string]any{"class_type": "CheckpointLoaderSimple", "inputs": map[string]any{"ckpt_name": ckpt}},
		"5": map[string]any{"class_type": "EmptyLatentImage", "inputs": map[string]any{"batch_size": 1, "height": 64, "width": 128}},
		"6": map[string]any{"class_type": "CLIPTextEncode", "inputs": map[string]any{"clip": []any{"4", 1}, "text": "a fox in snow"}},
		"7": map[string]any{"class_type": "CLIPTextEncode", "inputs": map[string]any{"clip": []any{"4", 1}, "text": "text, watermark"}},
		"8": map[string]any{"class_type": "VAEDecode", "inputs": map[string]any{"samples": []any{"3", 0}, "vae": []any{"4", 2}}},
		"9": map[string]any{"class_type": "SaveImage", "inputs": map[string]any{"filename_prefix": "ComfyUI", "images": []any{"8", 0}}},
	}
}

func TestComfyUI(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	var info map[string]map[string]any
	decode(t, ts.do("GET", "/object_info", nil), 200, &info)
	ck := info["CheckpointLoaderSimple"]["input"].(map[string]any)["required"].(map[string]any)["ckpt_name"].([]any)[0].([]any)
	if len(ck) != 1 || ck[0] != "sd" || info["KSampler"] == nil {
		t.Fatalf("object_info: checkpoints %v", ck)
	}
	var created struct {
		PromptID   string         `json:"prompt_id"`
		NodeErrors map[string]any `json:"node_errors"`
	}
	decode(t, ts.do("POST", "/prompt", map[string]any{"prompt": comfyDefault("sd", "euler"), "client_id": "c1"}), 200, &created)
	if created.PromptID == "" || len(created.NodeErrors) != 0 {
		t.Fatalf("POST /prompt: %+v", created)
	}
	var hist map[string]comfyEntry
	waitFor(t, "the prompt in the history", func() bool {
		decode(t, ts.do("GET", "/history/"+created.PromptID, nil), 200, &hist)
		return len(hist) == 1
	})
	e := hist[created.PromptID]
	imgs, _ := e.Outputs["9"]["images"].([]any)
	if e.Status.StatusStr != "success" || !e.Status.Completed || len(imgs) != 1 {
		t.Fatalf("history %+v", e)
	}
	r := f.reqs[len(f.reqs)-1]
	if r.Prompt != "a fox in snow" || r.Negative != "text, watermark" || r.Width != 128 || r.Steps != 3 || r.Seed != 8566257 ||
		r.CFGScale != 8 || r.Sampler != "euler" || r.Scheduler != "discrete" || r.RNG != "cpu" {
		t.Errorf("the job ran %+v", r)
	}
	im := imgs[0].(map[string]any)
	resp := ts.do("GET", "/api/view?filename="+im["filename"].(string)+"&subfolder=&type=output", nil)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /view: %d %s", resp.StatusCode, b)
	}
	if w, h, _ := pngSize(t, b); w != 128 || h != 64 {
		t.Errorf("the image is %dx%d", w, h)
	}
	var all map[string]comfyEntry
	decode(t, ts.do("GET", "/api/history", nil), 200, &all)
	var queue map[string][]any
	decode(t, ts.do("GET", "/queue", nil), 200, &queue)
	if len(all) != 1 || len(queue["queue_running"]) != 0 || len(queue["queue_pending"]) != 0 {
		t.Errorf("history %d prompts, queue %v", len(all), queue)
	}
	// GET /prompt is the queue info clients poll (and ping the server with).
	for _, path := range []string{"/prompt", "/api/prompt"} {
		var info struct {
			ExecInfo map[string]int `json:"exec_info"`
		}
		decode(t, ts.do("GET", path, nil), 200, &info)
		if n, ok := info.ExecInfo["queue_remaining"]; !ok || n != 0 {
			t.Errorf("GET %s: exec_info %v, want queue_remaining 0", path, info.ExecInfo)
		}
	}
	// The prompt's graph is journaled with the job.
	var job struct{ Params map[string]json.RawMessage }
	decode(t, ts.do("GET", "/v1/jobs/"+created.PromptID, nil), 200, &job)
	if !strings.Contains(string(job.Params["comfyui"]), `"client_id":"c1"`) {
		t.Errorf("params %s", job.Params["comfyui"])
	}
}

func TestComfyUIRefused(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	lora := comfyDefault("sd", "euler")
	lora["10"] = map[string]any{"class_type": "LoraLoader", "inputs": map[string]any{}}
	wrongLink := comfyDefault("sd", "euler")
	wrongLink["8"].(map[string]any)["inputs"].(map[string]any)["samples"] = []any{"5", 0}
	for _, tc := range []struct {
		name  string
		graph map[string]any
		typ   string
		node  string
		want  string
	}{
		{"missing node class", lora, "invalid_prompt", "", "LoraLoader"},
		{"sampler", comfyDefault("sd", "uni_pc"), "prompt_outputs_failed_validation", "3", "uni_pc"},
		{"link", wrongLink, "prompt_outputs_failed_validation", "8", "not a KSampler"},
		{"checkpoint", comfyDefault("nope.safetensors", "euler"), "prompt_outputs_failed_validation", "", "nope.safetensors"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do("POST", "/prompt", map[string]any{"prompt": tc.graph})
			var out comfyRefused
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			json.Unmarshal(b, &out)
			if resp.StatusCode != http.StatusBadRequest || out.Error.Type != tc.typ || !strings.Contains(string(b), tc.want) {
				t.Errorf("%d %s", resp.StatusCode, b)
			}
			if tc.node != "" && len(out.NodeErrors[tc.node].Errors) == 0 {
				t.Errorf("no node_errors for node %s: %s", tc.node, b)
			}
		})
	}
	if len(f.reqs) != 0 {
		t.Errorf("%d jobs ran", len(f.reqs))
	}
}

// wsClient is the least of a WebSocket client (RFC 6455) for the test:
// the handshake, then the server's frames.
type wsClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialWS(t *testing.T, url, path string) *wsClient {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef"))
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n",
		path, strings.TrimPrefix(url, "http://"), key)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.StatusCode != 101 || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		t.Fatalf("handshake: %d %v", resp.StatusCode, resp.Header)
	}
	return &wsClient{c: c, br: br}
}

// next reads one frame: its opcode and payload.
func (w *wsClient) next(t *testing.T) (byte, []byte) {
	t.Helper()
	w.c.SetReadDeadline(time.Now().Add(patience))
	var h [2]byte
	if _, err := io.ReadFull(w.br, h[:]); err != nil {
		t.Fatal(err)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		io.ReadFull(w.br, b[:])
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		io.ReadFull(w.br, b[:])
		n = binary.BigEndian.Uint64(b[:])
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(w.br, p); err != nil {
		t.Fatal(err)
	}
	return h[0] & 0x0f, p
}

// TestComfyUIWebSocket: /ws?clientId= follows that client's prompt as
// ComfyUI's socket does, to executing with node null, previews as binary
// frames.
func TestComfyUIWebSocket(t *testing.T) {
	f := newImageFake(t)
	ts := startImages(t, f)
	ws := dialWS(t, ts.url, "/ws?clientId=c1&previews=true")
	type message struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	read := func() (message, []byte) {
		op, p := ws.next(t)
		if op == wsBinary {
			return message{Type: "binary"}, p
		}
		var m message
		if err := json.Unmarshal(p, &m); err != nil {
			t.Fatalf("frame %q: %v", p, err)
		}
		return m, nil
	}
	if m, _ := read(); m.Type != "status" || m.Data["sid"] != "c1" {
		t.Fatalf("first message %+v", m)
	}
	var created struct {
		PromptID string `json:"prompt_id"`
	}
	decode(t, ts.do("POST", "/prompt", map[string]any{"prompt": comfyDefault("sd", "euler"), "client_id": "c1"}), 200, &created)
	var types []string
	var previews int
	for {
		m, bin := read()
		if bin != nil {
			previews++
			if binary.BigEndian.Uint32(bin) != 1 || binary.BigEndian.Uint32(bin[4:]) != 2 {
				t.Errorf("preview frame header % x", bin[:8])
			}
			pngSize(t, bin[8:])
			continue
		}
		if m.Data["prompt_id"] != nil && m.Data["prompt_id"] != created.PromptID {
			t.Errorf("message of another prompt: %+v", m)
		}
		types = append(types, m.Type)
		if m.Type == "executing" && m.Data["node"] == nil {
			break
		}
	}
	want := "execution_start execution_cached executing progress progress progress executed execution_success executing"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("messages %s\nwant     %s", got, want)
	}
	if previews < 1 {
		t.Error("no preview frame")
	}
	if m, _ := read(); m.Type != "status" {
		t.Errorf("after the prompt: %+v", m)
	}
}
