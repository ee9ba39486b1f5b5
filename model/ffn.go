package model

import "github.com/glassbox-ai/glassbox/compute"

// FFN is a block's feed-forward network: a gated network (Gate, Up,
// Down; SwiGLU unless Act says otherwise) or, in a mixture-of-experts
// model, the experts (MoE; the others unset).
type FFN struct {
	Gate compute.Matrix           // (hiddenDim, dim)
	Up   compute.Matrix           // (hiddenDim, dim)
	Down compute.Matrix           // (dim, hiddenDim)
	Act  func(gate, up []float32) // the gated unit: nil is compute.SwiGLU; Gemma's is compute.GeGLU
	MoE  *Experts
}

// BindFFN binds the feed-forward network of the block whose tensors start
// with prefix: its experts when c is a mixture of experts, else
// ffn_gate, ffn_up and ffn_down.
func BindFFN(b *Binder, c *Config, prefix string) FFN {
	if c.Experts > 0 {
		return FFN{MoE: BindExperts(b, c, prefix)}
	}
	return FFN{
		Gate: b.Matrix(prefix+"ffn_gate.weight", c.HiddenDim, c.Dim),
		Up:   b.Matrix(prefix+"ffn_up.weight", c.HiddenDim, c.Dim),
		Down: b.Matrix(prefix+"ffn_down.weight", c.Dim, c.HiddenDim),
	}
}

// FFN computes out (n, dim) = Down(act(Gate·xb) ⊙ Up·xb) over the normed
// rows xb (n, dim) (act is silu unless f.Act says otherwise), or the
// mixture of f's experts.
func (d *Decoder) FFN(f *FFN, out, xb []float32, n int) {
	if f.MoE != nil {
		d.MoE(f.MoE, out, xb, n)
		return
	}
	hid := f.Gate.Rows
	d.MatMuls(xb, n, compute.Product{Out: d.HB[:n*hid], W: f.Gate}, compute.Product{Out: d.HB2[:n*hid], W: f.Up})
	act := f.Act
	if act == nil {
		act = compute.SwiGLU
	}
	GLU(d.Pool, act, d.HB[:n*hid], d.HB2[:n*hid])
	d.MatMul(d.Pool, out, f.Down, d.HB[:n*hid], n)
}
