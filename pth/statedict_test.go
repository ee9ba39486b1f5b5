package pth

import (
	"errors"
	"testing"
)

// wrap puts a state-dict pickle (without its PROTO and STOP) under
// "state_dict" of a dict with training bookkeeping, as PyTorch Lightning
// saves Stable Diffusion .ckpt files.
func wrap(state []byte, extra ...byte) []byte {
	p := []byte{0x80, 2, '}', '('}
	p = append(p, binunicode("global_step")...)
	p = append(p, 'J', 0x30, 0x2b, 0x07, 0)
	p = append(p, extra...)
	p = append(p, binunicode("state_dict")...)
	p = append(p, state[2:len(state)-1]...)
	return append(p, 'u', '.')
}

func TestParseWrappedStateDict(t *testing.T) {
	store := f32bytes(1, 2, 3, 4, 5, 6)
	state := statePickle("w", "FloatStorage", 6, []byte{2, 3}, []byte{3, 1})
	f, err := Parse(checkpoint(t, wrap(state), store, false))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 1 || f.Tensors[0].Name != "w" {
		t.Fatalf("tensors %+v", f.Tensors)
	}
	// Bookkeeping that names a class is still refused (no code runs).
	evil := append(binunicode("callbacks"), global("pytorch_lightning.callbacks", "ModelCheckpoint")...)
	evil = append(evil, ')', 'R')
	if _, err := Parse(checkpoint(t, wrap(state, evil...), store, false)); !errors.Is(err, ErrGlobal) {
		t.Fatalf("callbacks: %v, want ErrGlobal", err)
	}
	// A wrapper whose state_dict is not a dict is read as a state dict,
	// and fails as one.
	bad := []byte{0x80, 2, '}'}
	bad = append(bad, binunicode("state_dict")...)
	bad = append(bad, 'K', 1, 's', '.')
	if _, err := Parse(checkpoint(t, bad, store, false)); !errors.Is(err, ErrPickle) {
		t.Fatalf("state_dict of an int: %v, want ErrPickle", err)
	}
}
