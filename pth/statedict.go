package pth

// stateDict finds the state dict in a checkpoint's top-level object: the
// object itself (torch.save(model.state_dict())), or the dict under the
// key "state_dict" of a top-level dict, as PyTorch Lightning saves a
// training checkpoint (the original Stable Diffusion .ckpt files:
// {"state_dict": ..., "global_step": ..., "epoch": ...}). The other
// entries of such a wrapper are bookkeeping and are ignored; the wrapper
// must still be made of allowed opcodes and globals to be read at all.
func stateDict(root any) (*pyDict, bool) {
	d, ok := root.(*pyDict)
	if !ok {
		return nil, false
	}
	for i, k := range d.keys {
		if s, _ := k.(string); s == "state_dict" {
			if inner, ok := d.vals[i].(*pyDict); ok {
				return inner, true
			}
		}
	}
	return d, true
}
