package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkAggregateStreams measures the server's aggregate generation
// speed with 1, 2 and 4 concurrent streams (--parallel = streams), each
// generating 32 tokens greedily through /v1/completions, on the model in
// $GLASSBOX_BENCH_MODEL (the synthetic 1B Q4_0 from
// `glassbox synth --preset 1b --type Q4_0`). Reported: tok/s = all
// completion tokens / wall time.
func BenchmarkAggregateStreams(b *testing.B) {
	model := os.Getenv("GLASSBOX_BENCH_MODEL")
	if model == "" {
		b.Skip("set GLASSBOX_BENCH_MODEL to a GGUF file (e.g. the synthetic 1B Q4_0)")
	}
	const tokens = 32
	for _, streams := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			s := serveFile(b, model, "--parallel", fmt.Sprint(streams), "--ctx", "256")
			name := strings.TrimSuffix(model[strings.LastIndex(model, "/")+1:], ".gguf")
			body := fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","max_tokens":%d,"temperature":0}`, name, tokens)
			complete := func() (int, error) {
				resp, err := http.Post(s.url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					return 0, err
				}
				defer resp.Body.Close()
				var out struct {
					Usage struct {
						CompletionTokens int `json:"completion_tokens"`
					}
				}
				if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
					return 0, fmt.Errorf("status %d: %v", resp.StatusCode, err)
				}
				return out.Usage.CompletionTokens, nil
			}
			if _, err := complete(); err != nil { // load the model, warm up
				b.Fatal(err)
			}
			b.ResetTimer()
			total, start := 0, time.Now()
			for range b.N {
				var wg sync.WaitGroup
				var mu sync.Mutex
				for range streams {
					wg.Add(1)
					go func() {
						defer wg.Done()
						n, err := complete()
						if err != nil {
							b.Error(err)
						}
						mu.Lock()
						total += n
						mu.Unlock()
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(total)/time.Since(start).Seconds(), "tok/s")
		})
	}
}
