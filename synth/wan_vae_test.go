package synth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/shared"
	"github.com/glassbox-ai/glassbox/tensor"
)

type byteCounter struct{ n int64 }

func (c *byteCounter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// TestWanVAEFile: the VAE layout is the spec's (names and shapes of
// weights/wan-vae-s2001-F32.tensors.json, in order) and the written file is
// byte for byte the spec's (size and sha256 from README §1).
func TestWanVAEFile(t *testing.T) {
	raw, err := os.ReadFile(shared.Path(t, "golden/wan/weights/wan-vae-s2001-F32.tensors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		SHA256  string `json:"sha256"`
		Tensors []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	ts := WanVAETensors()
	if len(ts) != len(spec.Tensors) {
		t.Fatalf("%d tensors, spec has %d", len(ts), len(spec.Tensors))
	}
	for k, st := range spec.Tensors {
		if ts[k].Name != st.Name || !slices.Equal(ts[k].Shape, st.Shape) {
			t.Fatalf("tensor %d: %s %v, spec %s %v", k, ts[k].Name, ts[k].Shape, st.Name, st.Shape)
		}
	}
	if testing.Short() {
		t.Skip("short: the 508 MB file's hash is not checked")
	}
	h := sha256.New()
	var c byteCounter
	if err := WriteWan(context.Background(), multi{h, &c}, "vae", 2001, tensor.F32); err != nil {
		t.Fatal(err)
	}
	const want = "e15e01e525af18093f528f59ea22621c445d4d7aebab1cce12a94e39438b9649"
	if got := hex.EncodeToString(h.Sum(nil)); got != want || c.n != 507591252 || spec.SHA256 != want {
		t.Errorf("file: %d bytes sha256 %s, want 507,591,252 bytes %s", c.n, got, want)
	}
}

type multi [2]interface{ Write([]byte) (int, error) }

func (m multi) Write(b []byte) (int, error) {
	m[0].Write(b)
	return m[1].Write(b)
}
