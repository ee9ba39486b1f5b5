package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/glassbox-ai/glassbox/chat"
	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/modelinfo"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/server"
)

func (b *Backend) Models(ctx context.Context) ([]server.ModelInfo, error) {
	names, err := b.Names()
	if err != nil {
		return nil, err
	}
	out := make([]server.ModelInfo, 0, len(names))
	for name, path := range names {
		info, err := b.info(name, path)
		if err != nil {
			continue // a broken file is reported when it is used
		}
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// verdicts caches plan verdicts by path and modification time.
var verdicts sync.Map

func (b *Backend) info(name, path string) (*server.ModelInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if isCheckpoint(path) {
		mi, err := b.checkpointInfo(name, path, st)
		if err != nil {
			// Not an SD 1.x checkpoint: one of a video job's files?
			if vi, verr := videoInfo(name, path, st); verr == nil {
				return vi, nil
			}
		}
		return mi, err
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sum := modelinfo.Summarize(f, false)
	mi := &server.ModelInfo{Name: name, Path: path, Size: st.Size(), Modified: st.ModTime().UTC(),
		Family: sum.Architecture, ParameterSize: modelinfo.HumanCount(sum.Parameters), Quantization: sum.FileType}
	if mi.Quantization == "" && len(sum.Quantization) > 0 {
		mi.Quantization = sum.Quantization[0].Type
	}
	if sum.ContextLength != nil {
		mi.ContextLength = int(*sum.ContextLength)
	}
	if _, file := b.files[name]; !file && b.store != nil {
		if e, err := b.store.Get(name); err == nil {
			mi.Parent = e.From
		}
	}
	key := fmt.Sprintf("%s@%d", path, st.ModTime().UnixNano())
	if v, ok := verdicts.Load(key); ok {
		mi.Verdict = v.(string)
	} else if p, err := plan.ForModel(f, plan.Options{Ctx: b.session.CtxLen, Batch: b.session.Batch}, b.dev); err == nil {
		mi.Verdict = p.Verdict
		verdicts.Store(key, p.Verdict)
	}
	return mi, nil
}

func (b *Backend) Show(ctx context.Context, name string) (*server.ModelDetail, error) {
	path, err := b.resolve(name)
	if err != nil {
		return nil, err
	}
	info, err := b.info(name, path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	if isCheckpoint(path) {
		c := "image"
		if videoFamilies[info.Family] {
			c = "video"
		}
		return &server.ModelDetail{ModelInfo: *info, Capabilities: []string{c}}, nil
	}
	f, err := gguf.Open(path)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	defer f.Close()
	d := &server.ModelDetail{ModelInfo: *info,
		Parameters: "temperature 0.8\ntop_k 40\ntop_p 0.9\nrepeat_penalty 1.1", Metadata: map[string]any{}}
	if t, err := f.Meta.String(chat.KeyTemplate); err == nil {
		d.Template = t
	}
	d.Capabilities = capabilities(f, d.Template)
	for _, kv := range f.Meta.KVs {
		if kv.Value.Len() > 16 {
			continue // vocabularies and merges, as Ollama leaves out without verbose
		}
		if v := metaValue(kv.Value.Any()); v != nil {
			d.Metadata[kv.Key] = v
		}
	}
	return d, nil
}

// capabilities is what Ollama's /api/show lists for a model, by its rules:
// a file that names a pooling (<arch>.pooling_type, made for embeddings)
// is an "embedding" model; any other "completion", with "tools" when its
// chat template takes them and "thinking" when it writes a <think> block,
// has Qwen3's switch or is in the harmony format (gpt-oss's channels).
// (Every model here answers the embeddings endpoints; Ollama lists only
// those made for it.)
func capabilities(f *gguf.File, template string) []string {
	arch, _ := f.Meta.String("general.architecture")
	if n, err := f.Meta.Int(arch + ".pooling_type"); err == nil && n > 0 {
		return []string{"embedding"}
	}
	caps := []string{"completion"}
	if strings.Contains(template, "tools") {
		caps = append(caps, "tools")
	}
	if strings.Contains(template, "<think>") || strings.Contains(template, "enable_thinking") || chat.IsHarmony(template) {
		caps = append(caps, "thinking")
	}
	return caps
}

// metaValue keeps scalar metadata and drops large arrays (vocabularies),
// as Ollama's /api/show does without verbose.
func metaValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 256 {
		return nil
	}
	return json.RawMessage(b)
}

func (b *Backend) Running(ctx context.Context) ([]server.RunningModel, error) {
	names, _ := b.Names()
	var out []server.RunningModel
	for _, st := range b.res.List() {
		rm := server.RunningModel{ModelInfo: server.ModelInfo{Name: st.Model}, Bytes: st.Bytes, InUse: st.InUse,
			Placement: st.Placement, State: st.State, KeepAlive: st.KeepAlive, ExpiresAt: st.ExpiresAt}
		if p, ok := names[st.Model]; ok {
			if info, err := b.info(st.Model, p); err == nil {
				rm.ModelInfo = *info
			}
		}
		out = append(out, rm)
	}
	return out, nil
}

func (b *Backend) Plan(ctx context.Context, req *server.PlanRequest) (json.RawMessage, error) {
	path, err := b.resolve(req.Model)
	if err != nil {
		return nil, err
	}
	dev := b.device()
	if req.Device != "" {
		resolve := plan.ParseDevice
		if b.cfg.PlanDevice != nil {
			resolve = b.cfg.PlanDevice
		}
		if dev, err = resolve(req.Device); err != nil {
			return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
		}
	}
	opts := b.session
	if req.Ctx > 0 {
		opts.CtxLen = req.Ctx
	}
	if req.Batch > 0 {
		opts.Batch = req.Batch
	}
	s, err := shape(path)
	if err != nil {
		return nil, err
	}
	p, err := plan.ForShape(s, plan.Options{Ctx: opts.CtxLen, Batch: opts.Batch, Parallel: req.Parallel,
		KV: strings.ToLower(req.KV)}, dev)
	if err != nil {
		return nil, pipeline.Wrap(pipeline.StagePlan, err, "")
	}
	return json.Marshal(p)
}
