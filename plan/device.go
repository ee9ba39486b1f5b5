package plan

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// Device is the hardware a plan is made for: this machine (Local) or a
// named profile (Profile). Bandwidths are bytes per second, peaks are
// operations per second.
type Device struct {
	Name   string `json:"name"`   // "this machine", "rtx4090", "custom"
	Source string `json:"source"` // where the figures come from

	RAMTotal     int64 `json:"ram_total_bytes"`
	RAMAvailable int64 `json:"ram_available_bytes"` // what a new job may use now

	Cores       int      `json:"cores"`
	CPU         string   `json:"cpu,omitempty"`
	CPUFeatures []string `json:"cpu_features,omitempty"`

	// CPU roofline: measured by the compute core's probe when its cached
	// result exists, otherwise an estimate (Estimated is then true).
	Bandwidth float64 `json:"bandwidth_bytes_per_s"`
	PeakF32   float64 `json:"peak_f32_flops"`
	PeakInt8  float64 `json:"peak_int8_ops"`
	Estimated bool    `json:"estimated"`
	Roofline  string  `json:"roofline"` // how the figures were obtained

	// Kernels are glassbox's measured kernel speeds on this device, one
	// entry per thread count probed (compute/kprobe): with them the decode
	// figure is measured, not a share of the roofline.
	Kernels []Kernels `json:"kernels,omitempty"`

	GPU *GPU `json:"gpu,omitempty"`
	// GPUsSeen names accelerators found on this machine; glassbox does not
	// use them yet, so they are listed, not planned for.
	GPUsSeen []string `json:"gpus_seen,omitempty"`

	// RuntimeBytes is the measured resident memory of a glassbox process
	// that has loaded nothing yet (see SelfRSS); 0 uses the built-in
	// estimate. It tracks the binary as it grows.
	RuntimeBytes int64 `json:"runtime_bytes,omitempty"`

	// Calibration corrects the constants from measured runs on this
	// device (nil: none recorded).
	Calibration *Calibration `json:"calibration,omitempty"`
}

// GPU is an accelerator's memory and speed. glassbox has no GPU backend
// yet: GPU plans answer "what would this hardware do" for profiles.
type GPU struct {
	Name      string  `json:"name"`
	VRAM      int64   `json:"vram_bytes"` // usable by a job
	Bandwidth float64 `json:"bandwidth_bytes_per_s"`
	PeakF16   float64 `json:"peak_f16_flops"` // dense tensor-core throughput
	PeakInt8  float64 `json:"peak_int8_ops"`
	Unified   bool    `json:"unified"` // shares RAM with the CPU (Apple silicon)
	// Overhead is memory the driver and runtime take before any tensor
	// (CUDA context, cuBLAS workspace); part of VRAM use.
	Overhead int64 `json:"overhead_bytes"`
}

// Local returns this machine's inventory: memory from /proc/meminfo (total
// and MemAvailable, so what other programs use counts), CPU model and
// features from /proc/cpuinfo, and an estimated roofline until SetRoofline
// is given the compute core's measured figures.
func Local() (*Device, error) {
	d := &Device{Name: "this machine", Source: "/proc/meminfo, /proc/cpuinfo", Cores: runtime.NumCPU()}
	mem, err := os.ReadFile("/proc/meminfo")
	switch {
	case err == nil:
		if d.RAMTotal, d.RAMAvailable, err = parseMeminfo(mem); err != nil {
			return nil, fmt.Errorf("plan: device inventory: /proc/meminfo: %w", err)
		}
	default:
		// No /proc: the platform's own call (sysctl, GlobalMemoryStatusEx).
		var src string
		if d.RAMTotal, d.RAMAvailable, src, err = osMemory(); err != nil {
			return nil, fmt.Errorf("plan: device inventory: %w (use --device to describe this machine)", err)
		}
		d.Source = src
	}
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		d.CPU, d.CPUFeatures = parseCPUInfo(info)
	}
	d.GPUsSeen = nvidiaGPUs()
	d.estimateRoofline(cpuMHz())
	return d, nil
}

// nvidiaGPUs lists the models the NVIDIA driver reports in
// /proc/driver/nvidia/gpus/*/information (nothing without the driver).
func nvidiaGPUs() []string {
	infos, _ := filepath.Glob("/proc/driver/nvidia/gpus/*/information")
	var out []string
	for _, p := range infos {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "Model" {
				out = append(out, strings.TrimSpace(v))
			}
		}
	}
	return out
}

// parseMeminfo returns MemTotal and MemAvailable in bytes. Kernels before
// 3.14 lack MemAvailable; MemFree + Cached stands in for it then.
func parseMeminfo(b []byte) (total, avail int64, err error) {
	vals := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			continue
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		vals[name] = n
	}
	total, ok := vals["MemTotal"]
	if !ok || total <= 0 {
		return 0, 0, fmt.Errorf("no MemTotal line")
	}
	avail, ok = vals["MemAvailable"]
	if !ok {
		avail = vals["MemFree"] + vals["Cached"]
	}
	return total, min(avail, total), nil
}

// parseCPUInfo returns the model name and the SIMD features that matter to
// the kernels.
func parseCPUInfo(b []byte) (model string, feats []string) {
	want := []string{"avx", "avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "asimd", "asimddp", "i8mm", "sve"}
	have := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			if model == "" {
				model = strings.TrimSpace(v)
			}
		case "flags", "Features":
			if len(have) == 0 {
				for _, f := range strings.Fields(v) {
					have[f] = true
				}
			}
		}
	}
	for _, f := range want {
		if have[f] {
			feats = append(feats, f)
		}
	}
	return model, feats
}

func cpuMHz() float64 {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

// Estimates used until the compute core's roofline probe has run: a
// memory stream of ~8 GB/s per core up to a dual-channel DDR4 ceiling of
// ~25 GB/s, and the FMA units' theoretical peak (what the probe measures;
// the speed model applies the share real kernels reach).
const (
	estBandwidthPerCore = 8e9
	estBandwidthMax     = 25e9
)

func (d *Device) estimateRoofline(mhz float64) {
	if mhz <= 0 {
		mhz = 2500
	}
	lanes := 4.0 // SSE: 4 f32 per instruction, no FMA
	if d.hasFeature("avx2") && d.hasFeature("fma") {
		lanes = 16 // 8-wide FMA = 16 FLOPs
	}
	if d.hasFeature("avx512f") {
		lanes = 32
	}
	if d.hasFeature("asimd") {
		lanes = 8 // 4-wide NEON FMA
	}
	perCore := mhz * 1e6 * lanes
	d.PeakF32 = float64(d.Cores) * perCore
	d.PeakInt8 = 2 * d.PeakF32 // int8 dot products do twice the work per lane pair
	if d.hasFeature("avx512_vnni") || d.hasFeature("avx_vnni") || d.hasFeature("asimddp") {
		d.PeakInt8 = 4 * d.PeakF32
	}
	d.Bandwidth = min(estBandwidthPerCore*float64(d.Cores), estBandwidthMax)
	d.Estimated = true
	d.Roofline = fmt.Sprintf("estimated from %d cores at %.0f MHz (run 'glassbox bench --roofline' to measure)", d.Cores, mhz)
}

// x16 reports whether glassbox's kernels on d copy weights into the x16
// layout (amd64 with AVX2, FMA and F16C, the AVX2 tier's features).
func (d *Device) x16() bool {
	return d.hasFeature("avx2") && d.hasFeature("fma") && d.hasFeature("f16c")
}

func (d *Device) hasFeature(f string) bool {
	for _, x := range d.CPUFeatures {
		if x == f {
			return true
		}
	}
	return false
}

// RefreshMemory re-reads how much RAM is available now, for a device made
// by Local that is kept (a server's): other programs come and go.
func (d *Device) RefreshMemory() error {
	if d.Name != "this machine" {
		return nil
	}
	l, err := Local()
	if err != nil {
		return err
	}
	d.RAMTotal, d.RAMAvailable = l.RAMTotal, l.RAMAvailable
	return nil
}

// WithReclaimable returns a copy of d whose available RAM counts bytes more:
// memory a server would free by evicting idle models before loading.
func (d *Device) WithReclaimable(bytes int64) *Device {
	c := *d
	c.RAMAvailable = min(c.RAMAvailable+max(bytes, 0), c.RAMTotal)
	return &c
}

// SetRoofline replaces the estimates with measured figures (bytes/s and
// ops/s; a zero leaves that figure as it was) and names their source.
func (d *Device) SetRoofline(bandwidth, peakF32, peakInt8 float64, source string) {
	if bandwidth > 0 {
		d.Bandwidth = bandwidth
	}
	if peakF32 > 0 {
		d.PeakF32 = peakF32
	}
	if peakInt8 > 0 {
		d.PeakInt8 = peakInt8
	}
	if bandwidth > 0 && peakF32 > 0 {
		d.Estimated = false
	}
	d.Roofline = source
}

// SelfRSS returns this process's resident memory now (VmRSS of
// /proc/self/status), or 0 where that is unknown. Called before a model is
// opened, it is the runtime's own share of a job's peak: set it as
// Device.RuntimeBytes.
func SelfRSS() int64 { return procStatus("VmRSS:") }

// PeakRSS returns this process's resident-memory high-water mark (VmHWM),
// or 0 where that is unknown: what a job measured, for Observe.
func PeakRSS() int64 { return procStatus("VmHWM:") }

func procStatus(key string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, key); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n * 1024
			}
		}
	}
	return 0
}
