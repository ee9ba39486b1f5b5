package vae

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
)

// LatentInfo describes a raw latents file; it is stored beside it as JSON
// (X.f32 → X.json), in the format of the shared golden data.
type LatentInfo struct {
	File        string  `json:"file"`
	DType       string  `json:"dtype"`     // "float32"
	ByteOrder   string  `json:"byteorder"` // "little"
	Layout      string  `json:"layout"`    // "CHW"
	Shape       []int   `json:"shape"`     // [32, H/8, W/8]
	Min         float64 `json:"min"`
	Max         float64 `json:"max"`
	Mean        float64 `json:"mean"`
	Std         float64 `json:"std"`
	SHA256      string  `json:"sha256,omitempty"`
	SourceImage string  `json:"source_image,omitempty"`
	SourceHW    []int   `json:"source_hw,omitempty"`
}

// SidecarPath returns where the description of latents file p lives.
func SidecarPath(p string) string { return strings.TrimSuffix(p, ".f32") + ".json" }

// DescribeLatents fills the statistics of z with shape (c, h, w); Std is
// the sample standard deviation (divided by N-1), as in the golden files.
func DescribeLatents(z []float32, c, h, w int) LatentInfo {
	info := LatentInfo{DType: "float32", ByteOrder: "little", Layout: "CHW", Shape: []int{c, h, w},
		Min: math.Inf(1), Max: math.Inf(-1)}
	var s, s2 float64
	for _, v := range z {
		x := float64(v)
		info.Min, info.Max = min(info.Min, x), max(info.Max, x)
		s += x
		s2 += x * x
	}
	if n := float64(len(z)); n > 1 {
		info.Mean = s / n
		info.Std = math.Sqrt(max((s2-n*info.Mean*info.Mean)/(n-1), 0)) // unbiased, as torch.std
	}
	return info
}

// ReadLatentInfo reads the sidecar of latents file p and checks that it
// describes float32 CHW latents with LatentChannels channels.
func ReadLatentInfo(p string) (LatentInfo, error) {
	var info LatentInfo
	sc := SidecarPath(p)
	b, err := os.ReadFile(sc)
	if err != nil {
		return info, fmt.Errorf("load: no --shape given and no description of the latents: %w", err)
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("load: %s: %w", sc, err)
	}
	if info.DType != "float32" || (info.ByteOrder != "" && info.ByteOrder != "little") || (info.Layout != "" && info.Layout != "CHW") {
		return info, fmt.Errorf("load: %s describes %s %s %s latents, want little-endian float32 CHW", sc, info.ByteOrder, info.DType, info.Layout)
	}
	if len(info.Shape) != 3 || info.Shape[0] != LatentChannels || info.Shape[1] < 1 || info.Shape[2] < 1 ||
		info.Shape[1] > 1<<14 || info.Shape[2] > 1<<14 {
		return info, fmt.Errorf("load: %s: shape %v, want [%d H W] with 1 ≤ H, W ≤ 16384", sc, info.Shape, LatentChannels)
	}
	return info, nil
}
