package compute

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glassbox-ai/glassbox/tensor"
)

// TestX16Released checks that a matrix's x16 copy leaves resident memory
// once the matrix is unreachable (it lives outside the Go heap).
func TestX16Released(t *testing.T) {
	data := make([]byte, 4096*4352) // 4096 rows of 4096 Q8_0 columns: 17 MiB
	for i := 0; i < len(data); i += 34 {
		data[i+1] = 0x3c // scale 1.0 (f16), levels 0
	}
	m := ForDecode(Matrix{Type: tensor.Q8_0, Rows: 4096, Cols: 4096, Data: data}, nil)
	if !m.ForDecoding() {
		t.Skip("no x16 kernel on this CPU")
	}
	before := rss(t)
	m.CopyX16()
	copied := rss(t)
	if copied-before < 12<<20 {
		t.Skipf("resident memory grew by only %d KiB for a 17 MiB copy: cannot judge here", (copied-before)>>10)
	}
	m = Matrix{}
	// Cleanups run on their own goroutine, which a loaded machine may not
	// schedule for a while: look again for up to a minute.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		if rss(t) < copied-12<<20 {
			return
		}
	}
	t.Errorf("resident memory %d MiB after dropping the matrix, %d MiB with its x16 copy", rss(t)>>20, copied>>20)
}

// rss is this process's resident set size.
func rss(t *testing.T) int64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Skip(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}
