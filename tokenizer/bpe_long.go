package tokenizer

// mergeLong runs the merges on a long word with a priority queue and lazy
// deletion, as llama.cpp does for every word: O(n log n) instead of the
// flat scan's O(n²).

type bpeNode struct {
	id         int32
	prev, next int32
	dead       bool
}

type bpeItem struct {
	rank, left int32
	lid, rid   int32 // the pair's ids when queued, to detect stale items
}

type bpeHeap []bpeItem

func (h bpeHeap) less(i, j int) bool {
	return h[i].rank < h[j].rank || (h[i].rank == h[j].rank && h[i].left < h[j].left)
}

func (h *bpeHeap) push(it bpeItem) {
	*h = append(*h, it)
	a := *h
	for i := len(a) - 1; i > 0; {
		up := (i - 1) / 2
		if !a.less(i, up) {
			break
		}
		a[i], a[up] = a[up], a[i]
		i = up
	}
}

func (h *bpeHeap) pop() bpeItem {
	a := *h
	top := a[0]
	last := len(a) - 1
	a[0] = a[last]
	a = a[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(a) && a.less(l, m) {
			m = l
		}
		if r < len(a) && a.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

func (m *bpeModel) mergeLong(s *bpeState, w string) []int32 {
	nodes := s.nodes[:0]
	for i := 0; i < len(w); i++ {
		nodes = append(nodes, bpeNode{id: m.byteID[w[i]], prev: int32(i - 1), next: int32(i + 1)})
	}
	nodes[len(nodes)-1].next = -1
	h := s.heap[:0]
	add := func(l int32) {
		if l < 0 || nodes[l].next < 0 {
			return
		}
		r := nodes[l].next
		if rank, _ := m.rank(nodes[l].id, nodes[r].id); rank != noRank {
			h.push(bpeItem{rank: rank, left: l, lid: nodes[l].id, rid: nodes[r].id})
		}
	}
	for i := int32(0); i+1 < int32(len(nodes)); i++ {
		add(i)
	}
	for len(h) > 0 {
		it := h.pop()
		l := &nodes[it.left]
		if l.dead || l.next < 0 || l.id != it.lid || nodes[l.next].id != it.rid {
			continue
		}
		r := &nodes[l.next]
		_, l.id = m.rank(it.lid, it.rid)
		r.dead = true
		l.next = r.next
		if r.next >= 0 {
			nodes[r.next].prev = it.left
		}
		add(l.prev)
		add(it.left)
	}
	syms := s.syms[:0]
	for i := int32(0); i >= 0; i = nodes[i].next {
		syms = append(syms, nodes[i].id)
	}
	s.nodes, s.heap, s.syms = nodes, h, syms
	return syms
}
