package vae

import "github.com/glassbox-ai/glassbox/pth"

// OpenEncoder reads and binds a TAEF2 encoder checkpoint. The weights are
// copied (widened to F32 and packed), so the file is closed on return.
func OpenEncoder(path string) (*Encoder, error) {
	f, err := pth.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return NewEncoder(f)
}

// OpenDecoder reads and binds a TAEF2 decoder checkpoint.
func OpenDecoder(path string) (*Decoder, error) {
	f, err := pth.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return NewDecoder(f)
}
