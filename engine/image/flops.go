package image

// UNetMACs is the multiply-accumulates of one SD 1.x UNet call on an h×w
// latent under nctx context tokens, counted layer by layer from the
// architecture (LDM's v1 config: model channels 320, multipliers 1, 2, 4,
// 4, two ResBlocks a level, spatial transformers of depth 1 on the first
// three levels, 768-wide context): convolutions, the transformers'
// projections and feed-forward (GEGLU, 4× width), and attention's two
// products (self: N² per channel, cross: N·nctx). Norms, activations and
// the time embedding are left out (under 1 %). It scales the measured
// time of one size to another.
func UNetMACs(h, w, nctx int) float64 {
	const ctxDim = 768
	var macs float64
	conv := func(hw, cin, cout, k int) { macs += float64(hw) * float64(cin) * float64(cout) * float64(k*k) }
	res := func(hw, cin, cout int) {
		conv(hw, cin, cout, 3)
		conv(hw, cout, cout, 3)
		if cin != cout {
			conv(hw, cin, cout, 1)
		}
	}
	attn := func(hw, c int) {
		n, cc := float64(hw), float64(c)
		macs += 2 * n * cc * cc                       // proj_in, proj_out
		macs += 4*n*cc*cc + 2*n*n*cc                  // self-attention: q, k, v, out; QKᵀ and AV
		macs += 2*n*cc*cc + 2*float64(nctx)*ctxDim*cc // cross-attention: q, out; k, v of the context
		macs += 2 * n * float64(nctx) * cc            // its QKᵀ and AV
		macs += n*cc*8*cc + n*4*cc*cc                 // GEGLU proj (to 2·4c), out (4c → c)
	}
	hw := [4]int{h * w, (h / 2) * (w / 2), (h / 4) * (w / 4), (h / 8) * (w / 8)}
	ch := [4]int{320, 640, 1280, 1280}
	conv(hw[0], 4, 320, 3) // conv_in
	skips := []int{320}
	cin := 320
	for l := range 4 {
		for range 2 {
			res(hw[l], cin, ch[l])
			cin = ch[l]
			if l < 3 {
				attn(hw[l], cin)
			}
			skips = append(skips, cin)
		}
		if l < 3 {
			conv(hw[l+1], cin, cin, 3) // downsample, stride 2
			skips = append(skips, cin)
		}
	}
	res(hw[3], 1280, 1280) // middle
	attn(hw[3], 1280)
	res(hw[3], 1280, 1280)
	for l := 3; l >= 0; l-- {
		for range 3 {
			s := skips[len(skips)-1]
			skips = skips[:len(skips)-1]
			res(hw[l], cin+s, ch[l])
			cin = ch[l]
			if l < 3 {
				attn(hw[l], cin)
			}
		}
		if l > 0 {
			conv(hw[l-1], cin, cin, 3) // upsample, then conv
		}
	}
	conv(hw[0], 320, 4, 3) // out
	return macs
}
