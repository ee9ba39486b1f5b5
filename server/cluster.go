package server

import (
	"context"
	"net/http"
	"time"
)

// ClusterBackend is the optional interface of a backend that shares jobs
// with glassbox workers (the cluster package's Front, docs/CLUSTER.md):
// GET /api/ps and GET /v1/ps list the workers' resident models after the
// front's own, each naming its worker, and GET /v1/cluster/workers lists
// the workers.
type ClusterBackend interface {
	// ClusterWorkers lists the workers' entries the front knows, live or
	// not (Live says which), sorted by name.
	ClusterWorkers(ctx context.Context) ([]ClusterWorker, error)
}

// ClusterWorker is one worker as GET /v1/cluster/workers reports it.
type ClusterWorker struct {
	Name     string `json:"name"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
	OS       string `json:"os,omitempty"`
	Arch     string `json:"arch,omitempty"`
	Cores    int    `json:"cores,omitempty"`
	CPU      string `json:"cpu,omitempty"`
	RAMTotal int64  `json:"ram_total_bytes,omitempty"`
	// RAMAvailable is the worker machine's available memory at its last
	// heartbeat; MemBudget its --mem-budget (0: none).
	RAMAvailable int64 `json:"ram_available_bytes,omitempty"`
	MemBudget    int64 `json:"mem_budget_bytes,omitempty"`
	// Models are the models on its disk it takes jobs for; Resident those
	// in its memory now.
	Models   []ModelInfo    `json:"models"`
	Resident []RunningModel `json:"resident"`
	// Running is how many jobs it runs now, Parallel how many it may.
	Running  int `json:"running"`
	Parallel int `json:"parallel,omitempty"`
	// Heartbeat is when its entry was last renewed (the NATS server's
	// clock), HeartbeatAge how long ago that was; Live is false once the
	// age passes the cluster's worker TTL (the front sends it no jobs).
	Started         time.Time `json:"started,omitzero"`
	Heartbeat       time.Time `json:"heartbeat"`
	HeartbeatAgeSec float64   `json:"heartbeat_age_s"`
	Live            bool      `json:"live"`
}

// workerRunning is a resident model on a worker, as the ps lists show it.
type workerRunning struct {
	RunningModel
	Worker string `json:"worker,omitempty"`
}

// running lists the resident models of the ps endpoints: the backend's
// own, then, on a cluster's front, the live workers' (never nil).
func (s *Server) running(ctx context.Context) ([]workerRunning, error) {
	local, err := s.cfg.Backend.Running(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]workerRunning, 0, len(local))
	for _, m := range local {
		out = append(out, workerRunning{RunningModel: m})
	}
	cb, ok := s.cfg.Backend.(ClusterBackend)
	if !ok {
		return out, nil
	}
	ws, err := cb.ClusterWorkers(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range ws {
		if !w.Live {
			continue
		}
		for _, m := range w.Resident {
			out = append(out, workerRunning{RunningModel: m, Worker: w.Name})
		}
	}
	return out, nil
}

// clusterWorkers answers GET /v1/cluster/workers: the workers' entries,
// or an empty list on a server that is not a cluster's front.
func (s *Server) clusterWorkers(w http.ResponseWriter, r *http.Request) {
	out := struct {
		Cluster bool            `json:"cluster"` // whether this server is a cluster's front
		Workers []ClusterWorker `json:"workers"`
	}{Workers: []ClusterWorker{}}
	if cb, ok := s.cfg.Backend.(ClusterBackend); ok {
		out.Cluster = true
		ws, err := cb.ClusterWorkers(r.Context())
		if err != nil {
			writeNativeError(w, toError(err))
			return
		}
		out.Workers = append(out.Workers, ws...)
	}
	writeJSON(w, http.StatusOK, out)
}
