package pth

// persistentLoad resolves a BINPERSID id. torch.save writes
// ('storage', <StorageClass>, key, location, numel).
func (u *unpickler) persistentLoad(pid any) (storageRef, error) {
	t, ok := pid.(pyTuple)
	if !ok || len(t) != 5 {
		return storageRef{}, wrapf(ErrPickle, "persistent id is %s of %d, want a 5-tuple", typeName(pid), lenOf(pid))
	}
	if s, _ := t[0].(string); s != "storage" {
		return storageRef{}, wrapf(ErrPickle, "persistent id kind %s, want \"storage\"", u.show(t[0]))
	}
	g, ok := t[1].(pyGlobal)
	if !ok || g.module != "torch" {
		return storageRef{}, wrapf(ErrPickle, "storage class is %s, want torch.*Storage", typeName(t[1]))
	}
	key, ok1 := t[2].(string)
	loc, ok2 := t[3].(string)
	numel, ok3 := t[4].(int64)
	if !ok1 || !ok2 || !ok3 || numel < 0 {
		return storageRef{}, wrapf(ErrPickle, "storage id (key %s, location %s, numel %s) has the wrong types",
			typeName(t[2]), typeName(t[3]), typeName(t[4]))
	}
	return storageRef{dtype: g.name, key: key, location: loc, numel: numel}, nil
}

// reduce applies an allowed callable to its arguments.
func (u *unpickler) reduce(fn, args any) (any, error) {
	g, ok := fn.(pyGlobal)
	if !ok {
		return nil, wrapf(ErrPickle, "REDUCE on %s, want an allowed global", typeName(fn))
	}
	a, ok := args.(pyTuple)
	if !ok {
		return nil, wrapf(ErrPickle, "REDUCE arguments are %s, want a tuple", typeName(args))
	}
	switch g.module + "." + g.name {
	case "collections.OrderedDict":
		if len(a) != 0 {
			return nil, wrapf(ErrPickle, "OrderedDict with %d arguments, want none", len(a))
		}
		return &pyDict{}, nil
	case "torch._utils._rebuild_tensor_v2":
		return u.rebuildTensor(a)
	case "torch._utils._rebuild_parameter":
		// (data, requires_grad, backward_hooks): a Parameter is its tensor here.
		if len(a) < 1 {
			return nil, wrapf(ErrPickle, "_rebuild_parameter without arguments")
		}
		t, ok := a[0].(*tensorRef)
		if !ok {
			return nil, wrapf(ErrPickle, "_rebuild_parameter of %s, want a tensor", typeName(a[0]))
		}
		return t, nil
	}
	return nil, wrapf(ErrGlobal, "%s cannot be called", cut(g.module+"."+g.name))
}

// rebuildTensor handles _rebuild_tensor_v2(storage, storage_offset, size,
// stride, requires_grad, backward_hooks[, metadata]).
func (u *unpickler) rebuildTensor(a pyTuple) (*tensorRef, error) {
	if len(a) < 4 {
		return nil, wrapf(ErrPickle, "_rebuild_tensor_v2 with %d arguments, want at least 4", len(a))
	}
	s, ok := a[0].(storageRef)
	if !ok {
		return nil, wrapf(ErrPickle, "_rebuild_tensor_v2 storage is %s", typeName(a[0]))
	}
	off, ok := a[1].(int64)
	if !ok || off < 0 {
		return nil, wrapf(ErrPickle, "bad storage offset %s", u.show(a[1]))
	}
	size, err := u.intTuple(a[2], "size")
	if err != nil {
		return nil, err
	}
	stride, err := u.intTuple(a[3], "stride")
	if err != nil {
		return nil, err
	}
	if len(size) != len(stride) {
		return nil, wrapf(ErrPickle, "size has %d dims, stride %d", len(size), len(stride))
	}
	return &tensorRef{storage: s, offset: off, size: size, stride: stride}, nil
}

func (u *unpickler) intTuple(v any, what string) ([]int64, error) {
	t, ok := v.(pyTuple)
	if !ok {
		return nil, wrapf(ErrPickle, "tensor %s is %s, want a tuple", what, typeName(v))
	}
	if len(t) > maxDims {
		return nil, wrapf(ErrLimitReached, "tensor %s has %d dims, at most %d", what, len(t), maxDims)
	}
	out := make([]int64, len(t))
	for i, x := range t {
		n, ok := x.(int64)
		if !ok || n < 0 {
			return nil, wrapf(ErrPickle, "tensor %s[%d] is %s", what, i, u.show(x))
		}
		out[i] = n
	}
	return out, nil
}

func lenOf(v any) int {
	if t, ok := v.(pyTuple); ok {
		return len(t)
	}
	return 0
}
