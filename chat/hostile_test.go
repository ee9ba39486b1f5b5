package chat

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// hostileWant lists, for each template of testdata/hostile, the limits
// that may stop it; an empty list is a template that renders (its output
// in hostileOutput).
var hostileWant = map[string][]string{
	"issue31-doubling":            {"MaxValue"},
	"repeat-literal":              {"MaxValue"},
	"repeat-pow":                  {"MaxValue"},
	"repeat-computed":             {"MaxValue"},
	"recursion":                   {"MaxDepth"},
	"recursion-call-block":        {"MaxDepth"},
	"recursion-through-namespace": {"MaxDepth"},
	"range-huge":                  {"MaxItems"},
	"nested-loops":                {"MaxSteps"},
	"list-doubling":               {"MaxItems"},
	"dict-dag-print":              {"MaxValue", "MaxSteps"},
	"list-dag-compare":            {"MaxValue", "MaxSteps"},
	"list-holds-itself":           {"MaxDepth"},
	"dict-holds-itself-tojson":    {"MaxDepth"},
	"deep-value":                  {"MaxDepth"},
	"replace-method":              {"MaxValue"},
	"replace-filter":              {"MaxValue"},
	"join-expand":                 {"MaxValue"},
	"indent-expand":               {"MaxValue"},
	"format-expand":               {"MaxValue"},
	"tojson-indent":               {"MaxValue"},
	"output-flood":                {"MaxOutput"},
	"text-flood":                  {"MaxOutput"},
	"slice-copies":                {"MaxBuilt"},
	"string-iteration":            {"MaxItems"},
	"string-index":                {"MaxSteps"},
	"filter-batch":                {"MaxItems"},
	"filter-list":                 {"MaxItems"},
	"split-flood":                 {"MaxItems"},
	"filter-block":                {"MaxValue"},
	"set-block":                   {"MaxValue"},
	"slice-huge-bounds":           {},
}

var hostileOutput = map[string]string{"slice-huge-bounds": "4"}

// hostileChild is set in the child process TestHostileTemplates starts.
const hostileChild = "GLASSBOX_CHAT_HOSTILE_CHILD"

// childAddressSpace is the address space the child may add to what it
// has when it starts: rendering a hostile template within the default
// limits needs a few hundred MB; without them, the template alone
// asks for 40 GB.
const childAddressSpace = 3 << 30

// TestHostileTemplates renders each template of testdata/hostile — built
// to exhaust memory, time or the stack — and checks it fails with the
// limit it should, in the encode stage, naming the numbers. On Linux the
// templates run in a child process under an address-space limit
// (RLIMIT_AS), so that a template that escapes the limits fails the test
// with the child's "out of memory" instead of killing the test binary.
func TestHostileTemplates(t *testing.T) {
	if os.Getenv(hostileChild) == "" && canLimitMemory && !raceEnabled {
		ctx := context.Background()
		if d, ok := t.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second)) // a hang fails this test, not the binary
			defer cancel()
		}
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileTemplates$", "-test.v")
		cmd.Env = append(os.Environ(), hostileChild+"=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("the child rendering testdata/hostile with %d MiB of address space failed: %v\n%s", childAddressSpace>>20, err, tail(out, 4000))
		}
		t.Logf("child:\n%s", tail(out, 8000))
		return
	}
	if os.Getenv(hostileChild) != "" {
		if err := limitMemory(childAddressSpace); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "hostile", "*.jinja"))
	if err != nil || len(files) != len(hostileWant) {
		t.Fatalf("%d templates in testdata/hostile, %d in hostileWant (%v)", len(files), len(hostileWant), err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jinja")
		t.Run(name, func(t *testing.T) {
			want, ok := hostileWant[name]
			if !ok {
				t.Fatalf("%s is not in hostileWant", name)
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			tmpl, err := New(string(src), file, "", "")
			if err != nil {
				t.Fatal(err)
			}
			tmpl.Now = func() time.Time { return time.Unix(0, 0) } // MaxTime aside: the other limits are counted, not timed
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			out, m, err := tmpl.render([]Message{{Role: "user", Content: "hi"}}, true, nil)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			t.Logf("%d steps, %d bytes built, %d MB allocated: %v", m.steps, m.built, (after.TotalAlloc-before.TotalAlloc)>>20, err)
			if len(want) == 0 {
				if err != nil || out != hostileOutput[name] {
					t.Fatalf("got %q, %v; want %q", out, err, hostileOutput[name])
				}
				return
			}
			var le *LimitError
			if !errors.As(err, &le) || !slices.Contains(want, le.Limit) {
				t.Fatalf("got %v, want a limit among %v", err, want)
			}
			var ce *Error
			if !errors.As(err, &ce) || ce.Stage() != "encode" || !strings.HasPrefix(err.Error(), "encode: chat template") {
				t.Errorf("error %q is not an encode-stage chat.Error", err)
			}
			if le.Need <= le.Max || !strings.Contains(err.Error(), "chat.Limits."+le.Limit) {
				t.Errorf("error %q does not name the limit and what passed it", err)
			}
		})
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
