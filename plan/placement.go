package plan

import "fmt"

// Placement says where the job's memory lives.
type Placement struct {
	Kind      string `json:"kind"` // "cpu", "gpu" (every layer in VRAM) or "split"
	Layers    int    `json:"layers"`
	GPULayers int    `json:"gpu_layers"` // the last GPULayers blocks run on the GPU
	CPULayers int    `json:"cpu_layers"`
	OutputGPU bool   `json:"output_on_gpu"`

	RAMBytes           int64 `json:"ram_bytes"`
	RAMAvailableBytes  int64 `json:"ram_available_bytes"`
	VRAMBytes          int64 `json:"vram_bytes"`
	VRAMAvailableBytes int64 `json:"vram_available_bytes"`

	Summary string `json:"summary"`
}

// place decides placement. Without a GPU everything is in RAM. With one,
// the last n blocks go to VRAM (each with its KV cache), plus the output
// matrix once every block is there (llama.cpp's -ngl convention); n is the
// largest that fits. Layers left on the CPU keep their weights in RAM.
func (p *Plan) place() {
	m, s, d := &p.Memory, p.Model, p.Device
	pl := &p.Placement
	pl.Layers = s.Layers
	pl.RAMAvailableBytes = d.RAMAvailable
	if d.GPU == nil {
		pl.Kind, pl.CPULayers = "cpu", s.Layers
		pl.RAMBytes = m.TotalBytes
		m.RAMBytes = m.TotalBytes
		pl.Summary = fmt.Sprintf("all %d layers in RAM", s.Layers)
		if s.Layers == 0 {
			pl.Summary = "all weights in RAM"
		}
		return
	}
	g := d.GPU
	vramAvail := g.VRAM - g.Overhead
	pl.VRAMAvailableBytes = vramAvail
	kvLayer := int64(0)
	if s.Layers > 0 {
		kvLayer = m.KVCacheBytes / int64(s.Layers)
	}
	// VRAM for n layers on the GPU: their weights and KV, the compute
	// arena, and the output matrix (or a copy of the tied table) when all
	// layers are there.
	vramFor := func(n int) int64 {
		if n == 0 {
			return 0
		}
		v := m.ComputeBytes
		for i := s.Layers - n; i < s.Layers; i++ {
			v += m.LayerBytes[i] + kvLayer
		}
		if n == s.Layers {
			v += m.OutputBytes + m.OtherBytes
			if s.Tied {
				v += m.EmbeddingTable
			}
		}
		return v
	}
	n := s.Layers
	for n > 0 && vramFor(n) > vramAvail {
		n--
	}
	pl.GPULayers, pl.CPULayers = n, s.Layers-n
	pl.OutputGPU = n == s.Layers && n > 0
	pl.VRAMBytes = vramFor(n)
	if n > 0 {
		pl.VRAMBytes += g.Overhead
	}
	// RAM: everything not on the GPU, plus the runtime overhead (the host
	// looks embedding rows up by reading them from the file, which keeps
	// them out of its resident memory).
	ram := m.TotalBytes - vramFor(n)
	if n == 0 {
		ram = m.TotalBytes
	} else if pl.CPULayers > 0 {
		ram += m.ComputeBytes // the CPU layers need their own activations
	}
	pl.RAMBytes = ram
	m.RAMBytes, m.VRAMBytes = pl.RAMBytes, pl.VRAMBytes
	if g.Unified {
		// One pool: the GPU's share comes out of the same RAM.
		pl.RAMAvailableBytes = d.RAMAvailable - pl.VRAMBytes
	}
	switch {
	case n == 0:
		pl.Kind = "cpu"
		pl.Summary = fmt.Sprintf("all %d layers in RAM (none fit the %s of %s)", s.Layers, FormatBytes(vramAvail), g.Name)
	case n == s.Layers:
		pl.Kind = "gpu"
		pl.Summary = fmt.Sprintf("all %d layers and the output on %s", s.Layers, g.Name)
	default:
		pl.Kind = "split"
		pl.Summary = fmt.Sprintf("%d/%d layers on %s, %d on the CPU", n, s.Layers, g.Name, pl.CPULayers)
	}
}

// fits reports whether the placement's memory fits what is available.
func (p *Plan) fits() bool {
	pl := &p.Placement
	if pl.RAMBytes > pl.RAMAvailableBytes {
		return false
	}
	return p.Device.GPU == nil || pl.VRAMBytes <= p.Device.GPU.VRAM
}

// available is the memory the job could use on this device: RAM plus, for a
// discrete GPU, its usable VRAM.
func (p *Plan) available() int64 {
	d := p.Device
	if d.GPU == nil || d.GPU.Unified {
		return d.RAMAvailable
	}
	return d.RAMAvailable + d.GPU.VRAM - d.GPU.Overhead
}

// needed is the memory the job needs across RAM and VRAM.
func (p *Plan) needed() int64 {
	pl := &p.Placement
	if p.Device.GPU != nil && p.Device.GPU.Unified {
		return pl.RAMBytes + pl.VRAMBytes
	}
	if pl.GPULayers > 0 {
		return pl.RAMBytes + pl.VRAMBytes - p.Device.GPU.Overhead
	}
	return pl.RAMBytes
}
