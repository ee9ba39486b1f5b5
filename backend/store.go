package backend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/glassbox-ai/glassbox/gguf"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/sched"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/store"
)

// Pull downloads a model into the store (pipeline stage load, its bytes
// as progress at most every 200 ms); a model the store holds already, by
// name or by the reference, is not downloaded again.
func (b *Backend) Pull(ctx context.Context, ref string) (string, error) {
	tr := pipeline.TraceFrom(ctx)
	if b.store == nil {
		return "", pipeline.Errorf(pipeline.StageLoad, "start serve with a glassbox home it can write", "this server has no model store to pull into")
	}
	if e, err := b.store.Find(ref); err == nil {
		tr.OnStageSkipped(pipeline.StageLoad, fmt.Sprintf("already in the store as %s (sha256 %s)", e.Name, e.SHA256))
		return e.Name, nil
	}
	tr.OnStageStart(pipeline.StageLoad)
	var last time.Time
	e, err := b.store.Pull(ctx, ref, store.PullOptions{
		Progress: func(done, total int64) {
			if now := time.Now(); now.Sub(last) >= 200*time.Millisecond || done == total {
				last = now
				tr.OnProgress(pipeline.StageLoad, done, total)
			}
		},
		Logf: func(format string, a ...any) { tr.OnWarning("pull", fmt.Sprintf(format, a...)) },
	})
	if err != nil {
		return "", pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	if e, err = KeepRunnable(b.store, e, func(m string) { tr.OnWarning("pull", m) }); err != nil {
		return "", pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	tr.OnStageDone(pipeline.StageLoad, pipeline.StageStats{Bytes: e.Bytes,
		Note: fmt.Sprintf("downloaded %s into the store as %s, sha256 %s", e.Source, e.Name, e.SHA256)})
	return e.Name, nil
}

// Copy stores model src again as dst (a hard link where the file system
// allows); an existing dst is an error. A copy is a model made from src
// with nothing of its own: the same file, src's profile, and src's
// residency (resident).
func (b *Backend) Copy(ctx context.Context, src, dst string) error {
	return b.Create(ctx, &server.CreateRequest{Name: dst, ModelProfile: server.ModelProfile{From: src}})
}

// Create stores model req.From again as req.Name (a hard link where the
// file system allows), with req's profile laid over the one From was made
// with: Ollama's create.
func (b *Backend) Create(ctx context.Context, req *server.CreateRequest) error {
	if b.store == nil {
		return pipeline.Errorf(pipeline.StageLoad, "start serve with a glassbox home it can write", "this server has no model store to create models in")
	}
	if len(req.Files) > 0 {
		return b.createFromBlob(req)
	}
	from, path, err := b.lookup(req.From)
	if err != nil {
		return err
	}
	if _, ok := b.files[req.Name]; ok {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "model %q already exists (a file given to serve)", req.Name))
	}
	var base store.Profile
	var sum string
	var size int64
	if e, err := b.store.Find(from); err == nil && e.Path == path {
		base, sum, size = e.Profile, e.SHA256, e.Bytes
	}
	p := store.Profile{System: req.System, Parameters: req.Parameters, License: req.License}.Over(base)
	if _, err := b.store.Create(req.Name, from, path, sum, size, p); err != nil {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "create %s from %s: %w", req.Name, from, err))
	}
	return nil
}

// createFromBlob stores an uploaded GGUF file (one blob) as req.Name with
// req's profile.
func (b *Backend) createFromBlob(req *server.CreateRequest) error {
	bad := func(err error) error {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "create %s: %w", req.Name, err))
	}
	for name, digest := range req.Files { // one, server.ollamaCreate checked
		path, err := b.store.BlobPath(digest)
		if err != nil {
			return bad(err)
		}
		f, err := gguf.Open(path)
		if err != nil {
			return bad(fmt.Errorf("%s: %w", name, err))
		}
		f.Close()
		st, err := os.Stat(path)
		if err != nil {
			return bad(err)
		}
		p := store.Profile{System: req.System, Parameters: req.Parameters, License: req.License}
		if _, err := b.store.Create(req.Name, "", path, strings.TrimPrefix(digest, "sha256:"), st.Size(), p); err != nil {
			return bad(err)
		}
		// The model holds the bytes now: rm frees them.
		if err := b.store.DropBlob(digest); err != nil {
			return bad(err)
		}
	}
	return nil
}

// HasBlob reports whether the store holds an uploaded blob.
func (b *Backend) HasBlob(ctx context.Context, digest string) (bool, error) {
	if b.store == nil {
		return false, nil
	}
	_, err := b.store.BlobPath(digest)
	return err == nil, nil
}

// PutBlob stores an upload in the store, checked against its digest.
func (b *Backend) PutBlob(ctx context.Context, digest string, r io.Reader) error {
	if b.store == nil {
		return pipeline.Errorf(pipeline.StageLoad, "start serve with a glassbox home it can write", "this server has no model store to upload into")
	}
	if _, err := b.store.PutBlob(digest, r); err != nil {
		return server.BadRequest(pipeline.Errorf(pipeline.StageLoad, "", "upload: %w", err))
	}
	return nil
}

// Profile reports what a store model was made with (nil for the others).
func (b *Backend) Profile(ctx context.Context, name string) (*server.ModelProfile, error) {
	if _, ok := b.files[name]; ok || b.store == nil {
		return nil, nil
	}
	e, err := b.store.Find(name)
	if err != nil || !e.HasProfile() {
		return nil, nil
	}
	from := e.From
	if from == "" {
		from = e.Ref // pulled from Ollama's registry with its parameters
	}
	return &server.ModelProfile{From: from, System: e.System, Parameters: e.Parameters, License: e.License}, nil
}

// Delete unloads a store model and removes it from the store; a --model
// file is not the server's to delete.
func (b *Backend) Delete(ctx context.Context, name string) error {
	name, _, err := b.lookup(name)
	if err != nil {
		return err
	}
	if _, ok := b.files[name]; ok {
		return pipeline.Errorf(pipeline.StageLoad, "remove the --model flag instead", "model %q is a file given to serve, not in the store", name)
	}
	if err := b.res.Unload(name); err != nil && !errors.Is(err, sched.ErrNotResident) {
		return err
	}
	if err := b.store.Remove(name); err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	return nil
}

// BlobFree is the room uploads have on the store's disk (server.BlobDisk).
func (b *Backend) BlobFree() (int64, bool) {
	if b.store == nil {
		return 0, false
	}
	return b.store.FreeBytes()
}

// KeepRunnable drops from a pulled model's profile the parameters (from
// Ollama's registry) that no request could set, each with a note through
// warn, so that the ones kept apply to every request.
func KeepRunnable(s *store.Store, e store.Entry, warn func(string)) (store.Entry, error) {
	if len(e.Parameters) == 0 {
		return e, nil
	}
	kept := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(e.Parameters)) {
		v := e.Parameters[k]
		if bad := server.CheckParameters(map[string]any{k: v}); bad != nil {
			warn(fmt.Sprintf("the registry's parameter %s %v is not kept: %s", k, v, strings.ReplaceAll(bad.Message, "parameters.", "")))
			continue
		}
		kept[k] = v
	}
	if len(kept) == len(e.Parameters) {
		return e, nil
	}
	p := e.Profile
	p.Parameters = kept
	return s.SetProfile(e.Name, p)
}
