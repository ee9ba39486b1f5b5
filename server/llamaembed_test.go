package server

import (
	"reflect"
	"strings"
	"testing"
)

// TestLlamaEmbedding: llama-server's /embedding — content as a string,
// strings or ids (input too), embd_normalize 2 or −1, one pooled vector
// per input in its answer's shape; other norms are refused by name.
func TestLlamaEmbedding(t *testing.T) {
	fake := newFake()
	ts := start(t, fake, nil)
	last := func() *EmbedRequest {
		fake.mu.Lock()
		defer fake.mu.Unlock()
		return fake.embeds[len(fake.embeds)-1]
	}
	var out []struct {
		Index     int
		Embedding [][]float32
	}
	decode(t, ts.do("POST", "/embedding", map[string]any{"model": "tiny", "content": "a b c"}), 200, &out)
	if len(out) != 1 || out[0].Index != 0 || len(out[0].Embedding) != 1 || len(out[0].Embedding[0]) == 0 || !last().Normalize {
		t.Errorf("one input: %+v (request %+v)", out, last())
	}
	decode(t, ts.do("POST", "/embeddings", map[string]any{"model": "tiny", "input": []string{"a", "b c"}, "embd_normalize": -1}), 200, &out)
	if q := last(); len(out) != 2 || out[1].Index != 1 || q.Normalize || !reflect.DeepEqual(q.Input, []string{"a", "b c"}) {
		t.Errorf("two inputs: %+v (request %+v)", out, q)
	}
	decode(t, ts.do("POST", "/embedding", map[string]any{"model": "tiny", "content": [][]int{{1, 2}}}), 200, &out)
	if q := last(); len(out) != 1 || !reflect.DeepEqual(q.InputIDs, [][]int{{1, 2}}) {
		t.Errorf("ids: %+v (request %+v)", out, q)
	}
	var e openAIError
	decode(t, ts.do("POST", "/embedding", map[string]any{"model": "tiny", "content": "a", "embd_normalize": 1}), 400, &e)
	if !strings.Contains(e.Error.Message, "embd_normalize 1 is not supported") {
		t.Errorf("taxicab: %q", e.Error.Message)
	}
	decode(t, ts.do("POST", "/embedding", map[string]any{"model": "tiny"}), 400, &e)
	if !strings.Contains(e.Error.Message, "content is required") {
		t.Errorf("no content: %q", e.Error.Message)
	}
}
