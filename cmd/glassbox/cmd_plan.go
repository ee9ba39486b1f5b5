package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/compute"
	"github.com/glassbox-ai/glassbox/compute/roofline"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/store"
)

// planConfig is the plan command's flags.
type planConfig struct {
	model    string
	opts     plan.Options
	device   string
	budget   string
	json     bool
	noCalib  bool
	profiles bool
	synth    string
	draft    string // --draft: a draft model planned beside the model
	probe    bool
	image    imagePlanFlags // --width/--height: a diffusion checkpoint's image job
}

// localRoofline returns this machine's measured bandwidth (bytes/s) and
// f32/int8 peaks (ops/s) from the compute core's cached roofline probe; ok
// is false when no probe has run ('glassbox bench --roofline').
var localRoofline = func() (bw, f32, int8 float64, source string, ok bool) {
	r, err := roofline.Load(0)
	note := ""
	if err != nil {
		// The cache is keyed by the kernel set too; after a kernel change
		// the newest probe of this machine is still the best figure.
		if r, ok = newestRoofline(); !ok {
			return 0, 0, 0, "", false
		}
		note = ", an older kernel set"
	}
	if r.ReadGBsN <= 0 {
		return 0, 0, 0, "", false
	}
	src := fmt.Sprintf("measured by 'glassbox bench --roofline' on %s with %d threads (%s%s)",
		r.Measured.Format(time.DateOnly), r.Threads, r.KernelImpl, note)
	return r.ReadGBsN * 1e9, r.F32GFLOPS * 1e9, r.Int8GOPS * 1e9, src, true
}

// newestRoofline is the most recent cached probe of this machine (with
// the default thread count if there is one), whatever kernels it was
// measured with.
func newestRoofline() (roofline.Result, bool) {
	path, err := roofline.CachePath()
	if err != nil {
		return roofline.Result{}, false
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return roofline.Result{}, false
	}
	var all map[string]roofline.Result
	if json.Unmarshal(b, &all) != nil {
		return roofline.Result{}, false
	}
	var best roofline.Result
	better := func(r roofline.Result) bool {
		want := compute.PhysicalCores()
		if (r.Threads == want) != (best.Threads == want) {
			return r.Threads == want
		}
		return r.Measured.After(best.Measured)
	}
	for _, r := range all {
		if r.Machine == roofline.Machine() && better(r) {
			best = r
		}
	}
	return best, !best.Measured.IsZero()
}

func init() {
	register(&command{
		name:    "plan",
		summary: "predict memory and speed for a model before loading it",
		run:     runPlan,
	})
}

func runPlan(ctx context.Context, env *cmdEnv, args []string) error {
	var c planConfig
	fs := newFlags(env, "plan", "-m MODEL [--ctx N] [--batch N] [--parallel N] [--kv f16|q8_0|f32] [--device NAME|SPEC] [--json]\n       glassbox plan -m CHECKPOINT [--width W --height H] [--steps N] [--sampler NAME] [--cfg-scale F] [--json]")
	fs.StringVar(&c.model, "m", "", "model file, store name, or http(s) URL (only the header is downloaded)")
	fs.IntVar(&c.opts.Ctx, "ctx", 0, "context length (0: the model's, at most 4096)")
	fs.IntVar(&c.opts.Batch, "batch", 0, "prefill batch size (0: 512)")
	fs.IntVar(&c.opts.Parallel, "parallel", 0, "sequences decoded together (0: 1)")
	fs.StringVar(&c.opts.KV, "kv", "f16", "KV cache type: f16, q8_0 or f32")
	fs.IntVar(&c.opts.Tokens, "tokens", 0, "tokens the job will hold, prompt + generated (0: a full context)")
	fs.IntVar(&c.opts.Prompt, "prompt-tokens", 0, "prompt length in tokens, when known (0: full batches)")
	fs.IntVar(&c.opts.Threads, "threads", 0, "worker threads the job will use (0: physical cores)")
	fs.IntVar(&c.opts.Threads, "t", 0, "short for --threads")
	fs.StringVar(&c.device, "device", "", "this machine (default), a profile ("+strings.Join(plan.ProfileNames(), ", ")+
		") or a spec like \"vram=8GiB,bw=360GB/s,ram=32GiB\"")
	fs.StringVar(&c.budget, "mem-budget", "", "refuse plans above this much memory (e.g. 12GiB)")
	fs.BoolVar(&c.json, "json", false, "print the plan as JSON")
	fs.BoolVar(&c.noCalib, "no-calibration", false, "ignore measured runs (show the uncorrected model)")
	fs.BoolVar(&c.profiles, "profiles", false, "list the device profiles and their sources")
	fs.BoolVar(&c.probe, "probe", true, "on this machine, first measure what is not cached yet (memory bandwidth once, kernel speeds once per build, a few seconds); false: cached figures or estimates only")
	fs.StringVar(&c.draft, "draft", "", "a draft model for speculative decoding (as run --draft): its memory is planned beside the model's")
	fs.StringVar(&c.synth, "synthetic", "", "plan a model you do not have: llama3-8b, llama3-70b or llama3.2-1b, with an optional :FORMAT (e.g. llama3-8b:Q4_K_M)")
	c.image.register(fs)
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if c.profiles {
		for _, n := range plan.ProfileNames() {
			desc, src, _ := plan.ProfileDescription(n)
			fmt.Fprintf(env.stdout, "%-12s %s\n             source: %s\n", n, desc, src)
		}
		return nil
	}
	if c.model == "" && len(pos) == 1 {
		c.model = pos[0]
	} else if len(pos) > 0 {
		return fmt.Errorf("plan: unexpected arguments %q", pos)
	}
	dev, err := planDevice(c.device, !c.noCalib)
	if err != nil {
		return err
	}
	if isLocalDevice(c.device) {
		if autoProbe && c.probe {
			if err := measureLocal(env.stderr, c.opts.Threads); err != nil {
				return err
			}
			if bw, f32, i8, src, ok := localRoofline(); ok {
				dev.SetRoofline(bw, f32, i8, src)
			}
		}
		dev.Kernels = localKernels(dev, c.opts.Threads)
	}
	if c.image.width > 0 || c.image.height > 0 || isCheckpoint(c.model) {
		return runImagePlan(env, &c, dev)
	}
	if c.synth != "" {
		if c.model != "" {
			return fmt.Errorf("plan: give -m or --synthetic, not both")
		}
		if c.model, err = writeSynthetic(c.synth); err != nil {
			return err
		}
		defer os.Remove(c.model)
	}
	if store.IsRef(c.model) {
		contact := announcer(env, "glassbox plan")
		u, err := store.ResolveRef(ctx, c.model, store.PullOptions{Contact: contact})
		if err != nil {
			return fmt.Errorf("load: %w", err)
		}
		if c.model, err = fetchHeader(ctx, u, contact); err != nil {
			return err
		}
		defer os.Remove(c.model)
	}
	if c.draft != "" {
		df, err := openModel(c.draft)
		if err != nil {
			return fmt.Errorf("load: --draft: %s", strings.TrimPrefix(err.Error(), "load: "))
		}
		dp, err := plan.ForModel(df, c.opts, dev)
		df.Close()
		if err != nil {
			return fmt.Errorf("plan: --draft: %w", err)
		}
		c.opts.DraftBytes = dp.Memory.ModelBytes()
	}
	f, err := openModel(c.model)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := plan.ForModel(f, c.opts, dev)
	if err != nil {
		return err
	}
	var budget int64
	if c.budget != "" {
		if budget, err = plan.ParseBytes(c.budget); err != nil {
			return fmt.Errorf("plan: --mem-budget: %w", err)
		}
	}
	admitErr := plan.Admit(p, budget)
	if c.json {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return err
		}
	} else if err := p.WriteText(env.stdout); err != nil {
		return err
	}
	return admitErr
}

// writeSynthetic writes a preset's header-only GGUF (a sparse file of the
// real size) to a temporary file and returns its path.
func writeSynthetic(spec string) (string, error) {
	l, err := plan.Synthetic(spec)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp("", "glassbox-synthetic-*.gguf")
	if err != nil {
		return "", fmt.Errorf("plan: %w", err)
	}
	tmp.Close()
	if err := l.WriteHeader(tmp.Name()); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// fetchHeader downloads the start of a remote GGUF with HTTP range requests
// (growing from 1 MiB until the header and tensor directory are in it) and
// writes it into a sparse temporary file of the remote file's full size,
// which gguf.Open reads like the real file. It returns the file's path.
func fetchHeader(ctx context.Context, url string, contact func(host string)) (string, error) {
	for n := int64(1 << 20); ; n *= 4 {
		prefix, total, err := fetchRange(ctx, url, n, contact)
		if err != nil {
			return "", err
		}
		tmp, err := os.CreateTemp("", "glassbox-header-*.gguf")
		if err != nil {
			return "", fmt.Errorf("load: %w", err)
		}
		_, werr := tmp.Write(prefix)
		if werr == nil {
			werr = tmp.Truncate(total)
		}
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return "", fmt.Errorf("load: %s: %w", url, werr)
		}
		f, err := gguf.Open(tmp.Name())
		if err == nil && f.DataOffset <= int64(len(prefix)) {
			f.Close()
			return tmp.Name(), nil
		}
		if f != nil {
			f.Close()
		}
		os.Remove(tmp.Name())
		if int64(len(prefix)) >= total || n >= 256<<20 {
			if err == nil {
				err = fmt.Errorf("header is larger than %d bytes", len(prefix))
			}
			return "", fmt.Errorf("load: %s: %w", url, err)
		}
	}
}

// fetchRange returns the first n bytes of url and the size of the whole
// file.
func fetchRange(ctx context.Context, url string, n int64, contact func(host string)) ([]byte, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, fmt.Errorf("load: %w", err)
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=0-%d", n-1))
	client := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 10 { // net/http's own limit
			return errors.New("stopped after 10 redirects")
		}
		contact(r.URL.Host)
		return nil
	}}
	contact(req.URL.Host)
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("load: %w", err)
	}
	defer resp.Body.Close()
	var total int64
	switch resp.StatusCode {
	case http.StatusPartialContent: // Content-Range: bytes 0-N/TOTAL
		cr := resp.Header.Get("Content-Range")
		i := strings.LastIndexByte(cr, '/')
		if i < 0 {
			return nil, 0, fmt.Errorf("load: %s: bad Content-Range %q", url, cr)
		}
		if total, err = strconv.ParseInt(cr[i+1:], 10, 64); err != nil {
			return nil, 0, fmt.Errorf("load: %s: Content-Range %q has no total size", url, cr)
		}
	case http.StatusOK: // no range support: read the start of the whole body
		total = resp.ContentLength
	default:
		return nil, 0, fmt.Errorf("load: GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, n))
	if err != nil {
		return nil, 0, fmt.Errorf("load: %s: %w", url, err)
	}
	if total < int64(len(b)) {
		return nil, 0, fmt.Errorf("load: %s: the server does not say how large the file is", url)
	}
	return b, total, nil
}

// isLocalDevice reports whether --device names this machine.
func isLocalDevice(arg string) bool { return arg == "" || arg == "local" }

// planDevice resolves --device; for this machine it adds the measured
// roofline, the measured kernel speeds and the calibration history when
// they exist (it measures nothing).
func planDevice(arg string, calibrate bool) (*plan.Device, error) {
	dev, err := plan.ParseDevice(arg)
	if err != nil {
		return nil, err
	}
	if !isLocalDevice(arg) {
		return dev, nil
	}
	// This process has loaded nothing yet: its resident memory is the
	// runtime's share of a job's peak.
	dev.RuntimeBytes = plan.SelfRSS()
	if localRoofline != nil {
		if bw, f32, i8, src, ok := localRoofline(); ok {
			dev.SetRoofline(bw, f32, i8, src)
		}
	}
	dev.Kernels = localKernels(dev, 0)
	if calibrate {
		if h, err := plan.DefaultHistory(); err == nil {
			if obs, err := h.Load(); err == nil {
				dev.Calibration = plan.Calibrate(obs, dev.Name)
			}
		}
	}
	return dev, nil
}
