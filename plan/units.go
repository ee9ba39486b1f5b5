package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits maps size suffixes to multipliers: SI (KB = 1000) and IEC
// (KiB = 1024), case-insensitive on the SI prefix letter.
var byteUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseBytes reads a size such as "8GiB", "24 GB", "512MiB" or "1073741824".
func ParseBytes(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || !(f >= 0) || math.IsInf(f, 0) || f*mult > 1<<62 { // !(f >= 0) also refuses NaN
		return 0, fmt.Errorf("%q is not a size (examples: 8GiB, 24GB, 512MiB)", s)
	}
	return int64(f * mult), nil
}

// ParseBandwidth reads a bandwidth such as "360GB/s", "4.8TB/s" or
// "68.25 GB/s" and returns bytes per second. The "/s" is required, so a
// size cannot be mistaken for a bandwidth.
func ParseBandwidth(s string) (float64, error) {
	t := strings.TrimSpace(s)
	lt := strings.ToLower(t)
	if !strings.HasSuffix(lt, "/s") {
		return 0, fmt.Errorf("%q is not a bandwidth (examples: 360GB/s, 4.8TB/s)", s)
	}
	n, err := ParseBytes(t[:len(t)-2])
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%q is not a bandwidth (examples: 360GB/s, 4.8TB/s)", s)
	}
	return float64(n), nil
}

// FormatBytes prints a size in binary units with three significant digits
// ("9.8 GiB", "512 MiB", "1.13 MiB").
func FormatBytes(n int64) string {
	f := float64(n)
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for math.Abs(f) >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	switch {
	case i == 0:
		return fmt.Sprintf("%d B", n)
	case math.Abs(f) >= 100:
		return fmt.Sprintf("%.0f %s", f, units[i])
	case math.Abs(f) >= 10:
		return fmt.Sprintf("%.1f %s", f, units[i])
	}
	return fmt.Sprintf("%.2f %s", f, units[i])
}

// FormatRate prints a rate in SI units ("360 GB/s", "1.2 TFLOP/s").
func FormatRate(v float64, unit string) string {
	prefixes := []string{"", "k", "M", "G", "T", "P"}
	i := 0
	for v >= 1000 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f %s%s", v, prefixes[i], unit)
	}
	return fmt.Sprintf("%.3g %s%s", v, prefixes[i], unit)
}

// formatTokPerS rounds a speed the way people quote it: "~23 tok/s",
// "~0.8 tok/s", "~1,200 tok/s".
func formatTokPerS(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("~%s tok/s", thousands(int64(math.Round(v/100)*100)))
	case v >= 1000:
		return fmt.Sprintf("~%s tok/s", thousands(int64(math.Round(v/10)*10)))
	case v >= 10:
		return fmt.Sprintf("~%.0f tok/s", v)
	}
	return fmt.Sprintf("~%.1f tok/s", v)
}

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
