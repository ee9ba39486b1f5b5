package video

import (
	"github.com/glassbox-ai/glassbox/checkpoint"
)

// FileInfo is what a file's tensors say about its place in a video job.
type FileInfo struct {
	// Component is the request field the file is for: "model" (the DiT),
	// "vae" or "text_encoder" (umT5); "" when it is none of them.
	Component string
	// Family is checkpoint.Detect's finding, with what showed it.
	Family checkpoint.Detection
	Params int64  // elements
	DTypes string // the element types, the most common first
}

// Inspect reads path's tensor names and shapes (no data) and tells which
// of a Wan 2.1 job's three files it is.
func Inspect(path string) (*FileInfo, error) {
	f, err := checkpoint.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d := checkpoint.Detect(f)
	st := checkpoint.StatsOf(f)
	fi := &FileInfo{Family: d, Params: st.Params, DTypes: st.DTypeList()}
	switch d.Family {
	case checkpoint.Wan:
		fi.Component = "model"
	case checkpoint.WanVAE:
		fi.Component = "vae"
	case checkpoint.UMT5:
		fi.Component = "text_encoder"
	}
	return fi, nil
}
