package synth

import (
	"context"
	"io"
)

// chunker generates a tensor's bytes in chunks on a pool of workers and
// writes them in order: the bytes do not depend on the number of workers,
// and at most 2 chunks per worker are held in memory.
type chunker struct {
	ctx      context.Context
	jobs     chan *chunkJob
	free     chan *chunkBuf
	total    int64
	done     int64
	progress func(done, total int64)
}

type chunkBuf struct {
	x []float32
	b []byte
}

type chunkJob struct {
	fill   func(buf []byte, x []float32, i0 int64)
	i0, n  int64
	esize  int
	buf    *chunkBuf
	finish chan struct{}
}

func newChunker(ctx context.Context, workers int, total int64, progress func(done, total int64)) *chunker {
	c := &chunker{ctx: ctx, jobs: make(chan *chunkJob), free: make(chan *chunkBuf, 2*workers), total: total, progress: progress}
	for range 2 * workers {
		c.free <- &chunkBuf{}
	}
	for range workers {
		go func() {
			for j := range c.jobs {
				x := grow(&j.buf.x, j.n)
				b := grow(&j.buf.b, j.n*int64(j.esize))
				j.fill(b, x, j.i0)
				close(j.finish)
			}
		}()
	}
	return c
}

// stop ends the workers; the chunker must not be used after.
func (c *chunker) stop() { close(c.jobs) }

// write generates numel elements of esize bytes with fill (called with a
// chunk's output bytes, float32 scratch of the chunk's length and the
// index of its first element) and writes them to w in order.
func (c *chunker) write(w io.Writer, numel int64, esize int, fill func(buf []byte, x []float32, i0 int64)) error {
	var pending []*chunkJob
	flush := func() error {
		j := pending[0]
		pending = pending[1:]
		<-j.finish
		_, err := w.Write(j.buf.b[:j.n*int64(esize)])
		c.free <- j.buf
		c.done += j.n * int64(esize)
		if c.progress != nil {
			c.progress(c.done, c.total)
		}
		return err
	}
	var err error
	for i0 := int64(0); i0 < numel && err == nil; i0 += chunkElems {
		if err = c.ctx.Err(); err != nil {
			break
		}
		if len(pending) == cap(c.free) {
			if err = flush(); err != nil {
				break
			}
		}
		j := &chunkJob{fill: fill, i0: i0, n: min(chunkElems, numel-i0), esize: esize, buf: <-c.free, finish: make(chan struct{})}
		pending = append(pending, j)
		c.jobs <- j
	}
	for len(pending) > 0 {
		if e := flush(); err == nil {
			err = e
		}
	}
	return err
}
