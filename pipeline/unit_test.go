package pipeline

import "testing"

func TestProgressUnit(t *testing.T) {
	tests := []struct {
		kind  string
		stage Stage
		want  string
	}{
		{"generate", StageEncode, "tokens"},
		{"generate", StageGenerate, "tokens"},
		{"generate", StageLoad, "bytes"},
		{"generate", StageQueued, "position"},
		{"image", StageGenerate, "steps"},
		{"image", StageDecode, "blocks"},
		{"image-decode", StageDecode, "blocks"},
		{"video", StageDecode, "frames"},
		{"video-decode", StageDecode, "frames"},
		{"vae-encode", StageEncode, "layers"},
		{"vae-decode", StageDecode, "tiles"},
	}
	for _, tc := range tests {
		t.Run(tc.kind+"/"+string(tc.stage), func(t *testing.T) {
			j := &Job{}
			j.info.Kind = tc.kind
			if got := j.unit(tc.stage); got != tc.want {
				t.Fatalf("unit = %q, want %q", got, tc.want)
			}
		})
	}
}
