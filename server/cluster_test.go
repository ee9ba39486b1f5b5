package server

import (
	"context"
	"testing"
	"time"
)

// clusterFake is a front: the fake backend plus two workers' entries, one
// live with a resident model, one whose heartbeat stopped.
type clusterFake struct {
	*fakeBackend
	workers []ClusterWorker
}

func (c clusterFake) ClusterWorkers(context.Context) ([]ClusterWorker, error) { return c.workers, nil }

func TestClusterPs(t *testing.T) {
	now := time.Now().UTC()
	f := newFake()
	cf := clusterFake{fakeBackend: f, workers: []ClusterWorker{
		{Name: "box2", Host: "h2", Cores: 8, RAMTotal: 16 << 30, Models: []ModelInfo{{Name: "big"}},
			Resident: []RunningModel{{ModelInfo: ModelInfo{Name: "big"}, Bytes: 123, State: "idle"}},
			Running:  1, Parallel: 2, Heartbeat: now, HeartbeatAgeSec: 0.5, Live: true},
		{Name: "gone", Models: []ModelInfo{{Name: "other"}},
			Resident:  []RunningModel{{ModelInfo: ModelInfo{Name: "other"}, Bytes: 9}},
			Heartbeat: now.Add(-time.Minute), HeartbeatAgeSec: 60},
	}}
	ts := start(t, f, func(c *Config) { c.Backend = cf })
	// The front's own resident model first, then the live worker's.
	var rr residentReply
	decode(t, ts.do("POST", "/v1/ps/tiny/load", `{"keep_alive":"1h"}`), 200, &rr)

	var ps psResponse
	decode(t, ts.do("GET", "/v1/ps", nil), 200, &ps)
	if len(ps.Models) != 2 || ps.Models[0].Name != "tiny" || ps.Models[0].Worker != "" ||
		ps.Models[1].Name != "big" || ps.Models[1].Worker != "box2" || ps.Models[1].Bytes != 123 {
		t.Fatalf("/v1/ps: %+v", ps.Models)
	}
	var ops struct{ Models []map[string]any }
	decode(t, ts.do("GET", "/api/ps", nil), 200, &ops)
	if len(ops.Models) != 2 || ops.Models[0]["worker"] != nil || ops.Models[1]["name"] != "big" ||
		ops.Models[1]["model"] != "big" || ops.Models[1]["worker"] != "box2" || ops.Models[1]["size"] != 123.0 ||
		ops.Models[1]["expires_at"] == nil || ops.Models[1]["details"] == nil {
		t.Fatalf("/api/ps: %v", ops.Models)
	}
	var cw struct {
		Cluster bool
		Workers []ClusterWorker
	}
	decode(t, ts.do("GET", "/v1/cluster/workers", nil), 200, &cw)
	if !cw.Cluster || len(cw.Workers) != 2 || cw.Workers[0].Name != "box2" || !cw.Workers[0].Live ||
		cw.Workers[0].Parallel != 2 || cw.Workers[0].RAMTotal != 16<<30 || cw.Workers[1].Live || cw.Workers[1].HeartbeatAgeSec != 60 {
		t.Fatalf("/v1/cluster/workers: %+v", cw)
	}
}

// TestClusterWorkersNotFront: a server that is no cluster's front lists
// no workers and says so.
func TestClusterWorkersNotFront(t *testing.T) {
	ts := start(t, newFake(), nil)
	var cw struct {
		Cluster *bool
		Workers []ClusterWorker
	}
	decode(t, ts.do("GET", "/v1/cluster/workers", nil), 200, &cw)
	if cw.Cluster == nil || *cw.Cluster || cw.Workers == nil || len(cw.Workers) != 0 {
		t.Fatalf("%+v", cw)
	}
}
