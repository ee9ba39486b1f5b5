package model

import (
	"sync"

	"github.com/glassbox-ai/glassbox/compute"
)

// gluGrain is the fewest elements a GLU chunk takes: 96 KiB of traffic
// and ~5 µs of vectorized SiLU, about what a hand-off to a pool worker
// costs (a 1B model's 8192-wide step stays on one thread; a prompt's rows
// spread).
const gluGrain = 8192

// GLU runs glu(gate, up) (compute.SwiGLU or compute.GeGLU: gate =
// act(gate) ⊙ up, the elementwise part of a gated feed-forward network;
// Shazeer 2020, "GLU Variants Improve Transformer", arXiv:2002.05202),
// split over the pool: a prompt's rows would otherwise leave the other
// threads idle for it. glu computes each element apart from the others, so
// the result does not depend on the thread count.
func GLU(p *compute.Pool, glu func(gate, up []float32), gate, up []float32) {
	t := gluTasks.Get().(*gluTask)
	*t = gluTask{glu: glu, gate: gate, up: up}
	p.ForTask(len(gate), gluGrain, t)
	*t = gluTask{}
	gluTasks.Put(t)
}

// gluTask is GLU's loop body, pooled so a step allocates nothing.
type gluTask struct {
	glu      func(gate, up []float32)
	gate, up []float32
}

var gluTasks = sync.Pool{New: func() any { return new(gluTask) }}

func (t *gluTask) Run(lo, hi int) {
	t.glu(t.gate[lo:hi], t.up[lo:hi])
}
