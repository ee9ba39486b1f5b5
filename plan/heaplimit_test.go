package plan

import (
	"math"
	"os"
	"testing"
)

func TestLimitHeap(t *testing.T) {
	tests := []struct {
		name  string
		env   string // GOMEMLIMIT, "-" for unset
		total int64
		want  int64 // the limit set, 0 for none
	}{
		{"unknown total", "-", 0, 0},
		{"small job: the floor", "-", 100 << 20, 164 << 20},
		{"large job: a quarter more", "-", 4 << 30, 5 << 30},
		{"huge: no overflow", "-", math.MaxInt64 - 1, math.MaxInt64},
		{"the user's GOMEMLIMIT wins", "1GiB", 4 << 30, 0},
		{"GOMEMLIMIT=off too", "off", 4 << 30, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != "-" {
				t.Setenv("GOMEMLIMIT", tc.env)
			} else {
				t.Setenv("GOMEMLIMIT", "")
				unsetenv(t, "GOMEMLIMIT")
			}
			var set int64
			old := setMemoryLimit
			setMemoryLimit = func(v int64) int64 { set = v; return 0 }
			defer func() { setMemoryLimit = old }()
			got := LimitHeap(tc.total)
			if got != tc.want || set != tc.want {
				t.Fatalf("LimitHeap(%d) = %d (set %d), want %d", tc.total, got, set, tc.want)
			}
		})
	}
}

// unsetenv removes key for the rest of the test (t.Setenv restores it).
func unsetenv(t *testing.T, key string) {
	t.Helper()
	if err := os.Unsetenv(key); err != nil {
		t.Fatal(err)
	}
}
