package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/glassbox-ai/glassbox/backend"
	"github.com/glassbox-ai/glassbox/cluster"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/journal"
	"github.com/glassbox-ai/glassbox/metrics"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
	"github.com/glassbox-ai/glassbox/sched"
	"github.com/glassbox-ai/glassbox/server"
	"github.com/glassbox-ai/glassbox/store"
	"github.com/glassbox-ai/glassbox/web"
)

func init() {
	register(&command{name: "serve", summary: "serve the native jobs, Ollama, OpenAI and Anthropic APIs (and the web UI) over HTTP", run: runServe})
}

// serveConfig is glassbox serve's flags.
type serveConfig struct {
	addr, homeDir, apiKey, budget, keepAlive, logLevel string
	maxBlob                                            string
	origins                                            stringList // --allow-origin, each comma-separated
	parallel, maxQueue                                 int
	maxBody                                            int64
	readTimeout, writeTimeout, grace                   time.Duration
	models                                             stringList
	drafts                                             stringList // MODEL=DRAFT
	draftMax                                           int
	session                                            *sessionOpts
	clusterListen, clusterToken, clusterNATS           string // --cluster-listen, --cluster-token, --nats
}

func runServe(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "serve", "[flags]")
	var c serveConfig
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8765", "address to listen on (beyond loopback an API key is required)")
	fs.StringVar(&c.homeDir, "home", "", "glassbox home: journal and model store (default $GLASSBOX_HOME or ~/.glassbox)")
	fs.StringVar(&c.apiKey, "api-key", os.Getenv("GLASSBOX_API_KEY"), "require the key: Authorization: Bearer KEY, x-api-key: KEY or HTTP Basic auth with KEY as the password (default $GLASSBOX_API_KEY)")
	fs.IntVar(&c.parallel, "parallel", 1, "generations of one model decoded together, one batched step for all (continuous batching)")
	fs.IntVar(&c.maxQueue, "max-queue", 64, "generations waiting for a slot; more get 503 (0: none wait)")
	fs.StringVar(&c.budget, "mem-budget", "", "memory all resident models may take, e.g. 8GiB (default: no limit beyond the machine)")
	fs.StringVar(&c.keepAlive, "keep-alive", "5m", "how long an idle model stays loaded (0: unload at once, -1: forever)")
	fs.Int64Var(&c.maxBody, "max-body", 8<<20, "request body limit in bytes")
	fs.StringVar(&c.maxBlob, "max-blob", "64GiB", "limit of one upload to /api/blobs (a GGUF file to import)")
	fs.Var(&c.origins, "allow-origin", "let web pages of this origin use the server (scheme://host[:port], * for any part, or * for every origin; repeatable or comma-separated; added to $"+server.OriginsEnv+")")
	fs.DurationVar(&c.readTimeout, "read-timeout", 30*time.Second, "time allowed to send request headers and body")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 60*time.Second, "time allowed for each write to a client")
	fs.DurationVar(&c.grace, "shutdown-grace", 10*time.Second, "on shutdown, time running jobs get to finish before they are cancelled")
	fs.Var(&c.models, "model", "serve this GGUF file besides the store's models, named after the file (repeatable)")
	fs.Var(&c.drafts, "draft", "MODEL=DRAFT: decode MODEL speculatively with DRAFT (a file or store name of the same vocabulary) proposing tokens; needs --parallel 1 (repeatable)")
	fs.IntVar(&c.draftMax, "draft-max", 3, "tokens a draft proposes per step (with --draft)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&c.clusterListen, "cluster-listen", "", "run an embedded NATS server with JetStream on this address for glassbox workers to join (docs/CLUSTER.md); beyond loopback --cluster-token is required")
	fs.StringVar(&c.clusterToken, "cluster-token", os.Getenv("GLASSBOX_CLUSTER_TOKEN"), "the token workers must present, or with --nats the token this front presents (default $GLASSBOX_CLUSTER_TOKEN)")
	fs.StringVar(&c.clusterNATS, "nats", "", "be a cluster's front on this external NATS server with JetStream, e.g. nats://nats:4222, instead of embedding one (docs/CLUSTER.md; workers join it with glassbox worker --nats)")
	c.session = sessionFlags(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := server.CheckBind(c.addr, c.apiKey); err != nil {
		return err
	}
	if c.clusterListen != "" {
		if c.clusterNATS != "" {
			return fmt.Errorf("cluster: --cluster-listen %s and --nats %s: give one (an embedded NATS server, or an external one)", c.clusterListen, c.clusterNATS)
		}
		if err := cluster.CheckListen(c.clusterListen, c.clusterToken); err != nil {
			return err
		}
	}
	if err := server.CheckOrigins(splitList(c.origins)); err != nil {
		return fmt.Errorf("--allow-origin: %w", err)
	}
	if err := server.CheckOrigins(splitList([]string{os.Getenv(server.OriginsEnv)})); err != nil {
		return fmt.Errorf("%s: %w", server.OriginsEnv, err)
	}
	if n, err := plan.ParseBytes(c.maxBlob); err != nil || n == 0 {
		return fmt.Errorf("--max-blob %q: not a size above 0 (examples: 64GiB, 500MB)", c.maxBlob)
	}
	if c.homeDir != "" {
		if err := os.Setenv(home.Env, c.homeDir); err != nil {
			return err
		}
	}
	if _, err := home.Ensure(); err != nil {
		return pipeline.Wrap(pipeline.StageLoad, err, "")
	}
	log := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: serveLogLevel(c.logLevel)}))
	return runServer(ctx, env, &c, log)
}

func serveLogLevel(s string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo
	}
	return l
}

// newBackend is the local backend serve runs (and each worker: the same
// code path), from c's flags.
func newBackend(c *serveConfig, mt *metrics.Metrics, log *slog.Logger) (*backend.Backend, error) {
	var budget int64
	if c.budget != "" {
		var err error
		if budget, err = plan.ParseBytes(c.budget); err != nil {
			return nil, fmt.Errorf("plan: --mem-budget: %w", err)
		}
	}
	keep, err := sched.ParseKeepAlive(c.keepAlive)
	if err != nil {
		return nil, fmt.Errorf("--keep-alive: %w", err)
	}
	dev, err := planDevice("", true)
	if err != nil {
		return nil, err
	}
	st, err := store.Default()
	if err != nil {
		st = nil // no store: pulls and creates are refused
	}
	return backend.New(backend.Config{Models: c.models, Store: st, Session: c.session.options(), Parallel: c.parallel,
		Drafts: c.drafts, DraftMax: c.draftMax, Device: dev, Budget: budget, KeepAlive: keep, Metrics: mt, Logger: log,
		ResolveDraft: resolveModel, PlanDevice: func(name string) (*plan.Device, error) { return planDevice(name, false) },
		Roofline: generateRoofline})
}

// frontBackend is the cluster's front over the local backend, keeping
// the local backend's image jobs and upload checks.
type frontBackend struct {
	*cluster.Front
	server.ImageBackend
	server.BlobDisk
}

// runServer wires the packages together and runs until ctx ends.
func runServer(ctx context.Context, env *cmdEnv, c *serveConfig, log *slog.Logger) error {
	mt := metrics.New()
	b, err := newBackend(c, mt, log)
	if err != nil {
		return err
	}
	defer b.Close()
	var be server.Backend = b
	if c.clusterListen != "" || c.clusterNATS != "" {
		var nc *nats.Conn
		url := c.clusterNATS
		if c.clusterListen != "" {
			dir, err := home.Ensure()
			if err != nil {
				return pipeline.Wrap(pipeline.StageLoad, err, "")
			}
			ns, err := cluster.StartServer(cluster.ServerConfig{Listen: c.clusterListen, Token: c.clusterToken, StoreDir: filepath.Join(dir, "cluster")})
			if err != nil {
				return err
			}
			defer ns.Close()
			if nc, err = ns.Connect("glassbox-front"); err != nil {
				return err
			}
			url = ns.URL()
		} else if nc, err = cluster.ConnectFront(ctx, c.clusterNATS, c.clusterToken); err != nil {
			return err
		}
		defer nc.Close()
		front, err := cluster.NewFront(nc, b, log)
		if err != nil {
			return err
		}
		defer front.Close()
		be = frontBackend{Front: front, ImageBackend: b, BlobDisk: b}
		fmt.Fprintf(env.stderr, "glassbox serve: cluster on %s (workers join with: glassbox worker --nats %s)\n", url, url)
	}
	jr, err := journal.OpenDefault(journal.Options{Logger: log})
	if err != nil {
		return err
	}
	defer jr.Close()
	if rec := jr.Recovered(); len(rec) > 0 {
		log.Warn("journal: jobs interrupted by the last shutdown marked failed", "jobs", len(rec))
	}
	mt.WatchJournal(backend.JournalStats(jr))

	maxBlob, _ := plan.ParseBytes(c.maxBlob) // checked by runServe
	m := pipeline.NewManager(pipeline.Options{Sinks: []pipeline.Sink{jr, mt}, Logger: log})
	srv, err := server.New(server.Config{
		Backend: be, Jobs: &server.ManagerJobs{M: m, History: backend.History{History: journal.History{J: jr}}}, Metrics: mt.Handler(),
		UI:       web.Handler(web.Config{Profiles: plan.ProfileNames(), Version: server.Version}),
		Parallel: c.parallel, MaxQueue: serveQueueFlag(c.maxQueue), MaxBodyBytes: c.maxBody, APIKey: c.apiKey,
		ReadTimeout: c.readTimeout, WriteTimeout: c.writeTimeout, ShutdownGrace: c.grace, Logger: log, DefaultCtx: *c.session.ctx,
		AllowOrigins: append(splitList(c.origins), splitList([]string{os.Getenv(server.OriginsEnv)})...), MaxBlobBytes: maxBlob,
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", c.addr)
	if err != nil {
		return pipeline.Wrap(pipeline.StageDeliver, err, "another server may be running; pick another --addr")
	}
	names, _ := b.Names()
	list := make([]string, 0, len(names))
	for n := range names {
		list = append(list, n)
	}
	fmt.Fprintf(env.stderr, "glassbox serve: listening on http://%s (models: %s; journal %s)\n",
		l.Addr(), strings.Join(list, ", "), jr.Path())

	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	select {
	case err := <-served:
		return pipeline.Wrap(pipeline.StageDeliver, err, "")
	case <-ctx.Done():
	}
	fmt.Fprintln(env.stderr, "glassbox serve: shutting down: no new work; running jobs get", c.grace, "to finish")
	sctx, cancel := context.WithTimeout(context.Background(), c.grace+5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	m.Shutdown(sctx)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if ferr := jr.Flush(); err == nil {
		err = ferr
	}
	fmt.Fprintln(env.stderr, "glassbox serve: stopped")
	return err
}

// splitList is the comma-separated items of each value, trimmed.
func splitList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// serveQueueFlag maps --max-queue 0 (nobody waits) to the server's -1.
func serveQueueFlag(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
