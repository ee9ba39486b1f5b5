package plan

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// profile is a named piece of hardware from public spec sheets. Host
// figures (RAM, RAM bandwidth, cores) are assumptions about a typical
// machine around the GPU; override them with ",ram=64GiB,ram-bw=80GB/s".
type profile struct {
	desc   string
	source string
	gpu    *GPU
	// host
	ram    int64
	ramBW  float64
	cores  int
	coreHz float64
	lanes  float64 // f32 FLOPs per cycle per core (FMA width × 2)
}

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
	gib = int64(1) << 30
)

// cudaOverhead is VRAM taken by the CUDA context, cuBLAS workspace and
// allocator slack before any tensor: ~0.5 GiB is what llama.cpp users
// observe on an idle context (nvidia-smi), used as a round figure.
const cudaOverhead = 512 * mib

// appleWorkingSet is the share of unified memory Metal lets one process
// keep resident on the GPU (MTLDevice.recommendedMaxWorkingSetSize: about
// two thirds of RAM on machines up to 36 GB, three quarters above).
func appleWorkingSet(ram int64) int64 {
	if ram <= 36*gib {
		return ram * 2 / 3
	}
	return ram * 3 / 4
}

func nvidia(name string, vram int64, bw, f16, i8 float64) *GPU {
	return &GPU{Name: name, VRAM: vram, Bandwidth: bw, PeakF16: f16, PeakInt8: i8, Overhead: cudaOverhead}
}

func apple(name string, ram int64, bw, f32 float64) *GPU {
	return &GPU{Name: name, VRAM: appleWorkingSet(ram), Bandwidth: bw, PeakF16: f32, PeakInt8: f32, Unified: true, Overhead: 256 * mib}
}

// profiles: memory sizes, bandwidths and dense (non-sparse) tensor
// throughputs from the vendors' published specifications:
//   - NVIDIA Ada GPU architecture whitepaper (RTX 4090, RTX 4060), appendix tables;
//   - NVIDIA Ampere GA102 whitepaper (RTX 3090, RTX 3060 from the GA106 product page);
//   - NVIDIA A100 and H100 datasheets; H200 product page (141 GB HBM3e, 4.8 TB/s);
//   - Apple newsroom M1 (68.25 GB/s), M2 (100 GB/s, 3.6 TFLOPS), M3 Max (400 GB/s);
//   - Raspberry Pi 5 product brief (LPDDR4X-4267, 32-bit bus: 17 GB/s, 4× Cortex-A76 2.4 GHz).
var profiles = map[string]profile{
	"rtx4090": {desc: "NVIDIA GeForce RTX 4090 24 GB, desktop with 64 GiB DDR5",
		source: "NVIDIA Ada whitepaper: 24 GB GDDR6X, 1008 GB/s, 165 TFLOPS FP16 (FP32 acc.), 660 TOPS INT8",
		gpu:    nvidia("RTX 4090", 24*gib, 1008e9, 165e12, 660e12), ram: 64 * gib, ramBW: 60e9, cores: 16, coreHz: 4.5e9, lanes: 32},
	"rtx3090": {desc: "NVIDIA GeForce RTX 3090 24 GB, desktop with 64 GiB DDR4",
		source: "NVIDIA Ampere GA102 whitepaper: 24 GB GDDR6X, 936 GB/s, 71 TFLOPS FP16 (FP32 acc.), 284 TOPS INT8",
		gpu:    nvidia("RTX 3090", 24*gib, 936e9, 71e12, 284e12), ram: 64 * gib, ramBW: 40e9, cores: 12, coreHz: 4.0e9, lanes: 32},
	"rtx3060-12g": {desc: "NVIDIA GeForce RTX 3060 12 GB, desktop with 32 GiB DDR4",
		source: "NVIDIA GeForce RTX 3060 specifications: 12 GB GDDR6, 192-bit, 15 Gbps = 360 GB/s; ~25 TFLOPS FP16 tensor, ~100 TOPS INT8",
		gpu:    nvidia("RTX 3060 12GB", 12*gib, 360e9, 25.6e12, 102e12), ram: 32 * gib, ramBW: 35e9, cores: 8, coreHz: 4.0e9, lanes: 32},
	"rtx4060-8g": {desc: "NVIDIA GeForce RTX 4060 8 GB, desktop with 32 GiB DDR5",
		source: "NVIDIA GeForce RTX 4060 specifications: 8 GB GDDR6, 128-bit, 17 Gbps = 272 GB/s; ~60 TFLOPS FP16 tensor, ~240 TOPS INT8",
		gpu:    nvidia("RTX 4060", 8*gib, 272e9, 60e12, 242e12), ram: 32 * gib, ramBW: 60e9, cores: 8, coreHz: 4.5e9, lanes: 32},
	"a100-80g": {desc: "NVIDIA A100 80 GB SXM, server with 512 GiB RAM",
		source: "NVIDIA A100 datasheet: 80 GB HBM2e, 2039 GB/s, 312 TFLOPS FP16, 624 TOPS INT8",
		gpu:    nvidia("A100 80GB", 80*gib, 2039e9, 312e12, 624e12), ram: 512 * gib, ramBW: 150e9, cores: 64, coreHz: 3.0e9, lanes: 32},
	"h100-80g": {desc: "NVIDIA H100 80 GB SXM, server with 1 TiB RAM",
		source: "NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s, 989 TFLOPS FP16, 1979 TOPS INT8 (dense)",
		gpu:    nvidia("H100 SXM", 80*gib, 3.35e12, 989e12, 1979e12), ram: 1024 * gib, ramBW: 250e9, cores: 96, coreHz: 3.0e9, lanes: 64},
	"h200": {desc: "NVIDIA H200 141 GB SXM, server with 2 TiB RAM",
		source: "NVIDIA H200 product page: 141 GB HBM3e, 4.8 TB/s; Hopper tensor cores 989 TFLOPS FP16, 1979 TOPS INT8 (dense)",
		gpu:    nvidia("H200", 141e9, 4.8e12, 989e12, 1979e12), ram: 2048 * gib, ramBW: 300e9, cores: 112, coreHz: 3.0e9, lanes: 64},
	"m1-8g": {desc: "Apple M1, 8 GB unified memory",
		source: "Apple newsroom (Nov 2020): M1, 68.25 GB/s LPDDR4X, 2.6 TFLOPS GPU",
		gpu:    apple("M1 GPU", 8*gib, 68.25e9, 2.6e12), ram: 8 * gib, ramBW: 60e9, cores: 4, coreHz: 3.2e9, lanes: 16},
	"m2-16g": {desc: "Apple M2, 16 GB unified memory",
		source: "Apple newsroom (Jun 2022): M2, 100 GB/s LPDDR5, 3.6 TFLOPS GPU",
		gpu:    apple("M2 GPU", 16*gib, 100e9, 3.6e12), ram: 16 * gib, ramBW: 90e9, cores: 4, coreHz: 3.5e9, lanes: 16},
	"m3-max-64g": {desc: "Apple M3 Max (16-core CPU, 40-core GPU), 64 GB unified memory",
		source: "Apple newsroom (Oct 2023): M3 Max, 400 GB/s unified memory, ~16 TFLOPS GPU",
		gpu:    apple("M3 Max GPU", 64*gib, 400e9, 16.4e12), ram: 64 * gib, ramBW: 300e9, cores: 12, coreHz: 4.0e9, lanes: 16},
	"pi5-8g": {desc: "Raspberry Pi 5, 8 GB, CPU only",
		source: "Raspberry Pi 5 product brief: LPDDR4X-4267 on a 32-bit bus (17 GB/s), 4× Cortex-A76 at 2.4 GHz",
		ram:    8 * gib, ramBW: 17e9 * 0.6, cores: 4, coreHz: 2.4e9, lanes: 16},
}

// ProfileNames lists the named device profiles.
func ProfileNames() []string {
	out := make([]string, 0, len(profiles))
	for n := range profiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ProfileDescription returns a profile's one-line description and source.
func ProfileDescription(name string) (desc, source string, ok bool) {
	p, ok := profiles[name]
	return p.desc, p.source, ok
}

func (p profile) device(name string) *Device {
	d := &Device{Name: name, Source: p.source, RAMTotal: p.ram, Cores: p.cores, Bandwidth: p.ramBW,
		PeakF32: float64(p.cores) * p.coreHz * p.lanes, Estimated: true,
		Roofline: "host CPU figures assumed for a typical machine of this class"}
	d.PeakInt8 = 4 * d.PeakF32
	d.RAMAvailable = p.ram - osReserve(p.ram)
	if p.gpu != nil {
		g := *p.gpu
		d.GPU = &g
	}
	return d
}

// osReserve is the RAM a profile assumes the OS and other programs keep:
// 10% of it, at least 1.5 GiB.
func osReserve(ram int64) int64 { return max(ram/10, 3*gib/2) }

// ParseDevice returns the device for a --device argument: "" or "local"
// (this machine, the same as Local), a profile name, a custom description
// such as "vram=8GiB,bw=360GB/s,ram=32GiB", or a profile followed by
// overrides ("rtx4090,ram=32GiB"). Keys: vram, bw (GPU bandwidth, or RAM
// bandwidth when there is no GPU), ram, ram-bw, cores, unified=true.
func ParseDevice(arg string) (*Device, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" || arg == "local" {
		return Local()
	}
	parts := strings.Split(arg, ",")
	var d *Device
	if p, ok := profiles[strings.ToLower(parts[0])]; ok {
		d = p.device(strings.ToLower(parts[0]))
		parts = parts[1:]
	} else if !strings.Contains(parts[0], "=") {
		return nil, fmt.Errorf("plan: unknown device %q (profiles: %s; or a description like \"vram=8GiB,bw=360GB/s,ram=32GiB\")",
			parts[0], strings.Join(ProfileNames(), ", "))
	} else {
		d = &Device{Name: "custom", Source: "--device " + arg, Cores: 8, Bandwidth: 40e9, Estimated: true,
			Roofline: "host CPU figures assumed (8 cores, 40 GB/s) unless given"}
		d.PeakF32 = 8 * 3.5e9 * 32
		d.PeakInt8 = 4 * d.PeakF32
	}
	if err := d.applyOverrides(parts); err != nil {
		return nil, fmt.Errorf("plan: --device %q: %w", arg, err)
	}
	if d.RAMTotal <= 0 {
		return nil, fmt.Errorf("plan: --device %q: no RAM size (add ram=SIZE, e.g. ram=32GiB)", arg)
	}
	return d, nil
}

func (d *Device) applyOverrides(parts []string) error {
	var gpuBW float64
	var vram int64
	unified := false
	for _, p := range parts {
		k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
		if !ok {
			return fmt.Errorf("%q is not key=value", p)
		}
		var err error
		switch strings.ToLower(k) {
		case "ram":
			var n int64
			if n, err = ParseBytes(v); err == nil {
				d.RAMTotal, d.RAMAvailable = n, n-osReserve(n)
			}
		case "vram":
			vram, err = ParseBytes(v)
		case "bw":
			gpuBW, err = ParseBandwidth(v)
		case "ram-bw":
			d.Bandwidth, err = ParseBandwidth(v)
		case "cores":
			var n int
			n, err = strconv.Atoi(v)
			if err == nil && (n <= 0 || n > 4096) {
				err = fmt.Errorf("cores=%d is out of range", n)
			}
			if err == nil {
				d.PeakF32 *= float64(n) / float64(max(d.Cores, 1))
				d.PeakInt8 *= float64(n) / float64(max(d.Cores, 1))
				d.Cores = n
			}
		case "unified":
			unified, err = strconv.ParseBool(v)
		default:
			return fmt.Errorf("unknown key %q (keys: vram, bw, ram, ram-bw, cores, unified)", k)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	switch {
	case vram > 0 && d.GPU == nil:
		d.GPU = nvidia("GPU", vram, 0, 0, 0)
	case vram > 0:
		d.GPU.VRAM = vram
	}
	if gpuBW > 0 {
		if d.GPU == nil {
			d.Bandwidth = gpuBW
		} else {
			d.GPU.Bandwidth = gpuBW
		}
	}
	if d.GPU != nil {
		if unified {
			d.GPU.Unified, d.GPU.Overhead = true, 256*mib
		}
		if d.GPU.Bandwidth <= 0 {
			return fmt.Errorf("vram given without bw (GPU memory bandwidth, e.g. bw=360GB/s)")
		}
		if d.GPU.PeakF16 <= 0 {
			// A guess from the memory system: consumer GPUs offer ~70 FLOPs
			// of FP16 tensor throughput per byte/s of bandwidth.
			d.GPU.PeakF16, d.GPU.PeakInt8 = 70*d.GPU.Bandwidth, 280*d.GPU.Bandwidth
		}
	}
	return nil
}
