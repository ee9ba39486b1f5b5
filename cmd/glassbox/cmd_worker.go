package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/glassbox-ai/glassbox/cluster"
	"github.com/glassbox-ai/glassbox/internal/home"
	"github.com/glassbox-ai/glassbox/metrics"
	"github.com/glassbox-ai/glassbox/pipeline"
	"github.com/glassbox-ai/glassbox/plan"
)

func init() {
	register(&command{name: "worker", summary: "run text jobs of a glassbox cluster's front (glassbox serve --cluster-listen) with this machine's models", run: runWorker})
}

func runWorker(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "worker", "--nats URL [flags]")
	var c serveConfig
	var url, token, name string
	var models stringList
	host, _ := os.Hostname()
	fs.StringVar(&url, "nats", "", "the cluster's NATS address, e.g. nats://front:4222 (glassbox serve --cluster-listen prints it)")
	fs.StringVar(&token, "token", os.Getenv("GLASSBOX_CLUSTER_TOKEN"), "the cluster's token (the front's --cluster-token; default $GLASSBOX_CLUSTER_TOKEN)")
	fs.StringVar(&name, "name", host, "this worker's name in the cluster (unique; the jobs it runs are recorded under it)")
	fs.Var(&models, "models", "take jobs only for these models of the store (comma-separated or repeatable; default: all)")
	fs.StringVar(&c.homeDir, "home", "", "glassbox home: the model store (default $GLASSBOX_HOME or ~/.glassbox)")
	fs.IntVar(&c.parallel, "parallel", 1, "jobs run at once, decoded together when of one model (continuous batching)")
	fs.StringVar(&c.budget, "mem-budget", "", "memory all resident models may take, e.g. 8GiB (default: no limit beyond the machine)")
	fs.StringVar(&c.keepAlive, "keep-alive", "5m", "how long an idle model stays loaded (0: unload at once, -1: forever)")
	affinity := fs.Duration("affinity-delay", cluster.DefaultAffinityDelay, "how long a queued job of a model not loaded here is left for a worker that has it loaded before this one takes it (0: none)")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug, info, warn or error")
	c.draftMax = 3
	c.session = sessionFlags(fs)
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if url == "" {
		return fmt.Errorf("worker: --nats is required (the address glassbox serve --cluster-listen prints)")
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
	b, err := newBackend(&c, metrics.New(), log)
	if err != nil {
		return err
	}
	defer b.Close()
	nc, err := cluster.Dial(url, token, "glassbox-worker "+name)
	if err != nil {
		return err
	}
	defer nc.Close()
	var only []string
	if len(models) > 0 {
		only = splitList(models)
	}
	budget, _ := plan.ParseBytes(c.budget) // checked by newBackend
	if *affinity == 0 {
		*affinity = -1 // WorkerConfig's "none" (its 0 is the default)
	}
	w, err := cluster.NewWorker(ctx, nc, cluster.WorkerConfig{Name: name, Models: only, Backend: b, Parallel: c.parallel,
		MemBudget: budget, AffinityDelay: *affinity, Logger: log})
	if err != nil {
		return err
	}
	var names []string
	for _, m := range w.Models() {
		names = append(names, m.Name)
	}
	fmt.Fprintf(env.stderr, "glassbox worker %s: joined %s, taking jobs for: %s\n", name, url, strings.Join(names, ", "))
	err = w.Run(ctx)
	fmt.Fprintf(env.stderr, "glassbox worker %s: stopped\n", name)
	return err
}
