package synth

import "strconv"

// wanVAELayout builds the VAE's tensor list from its module tree: a
// module's parameters before its children's, children in definition order.
func wanVAELayout() []WanTensor {
	var ts []WanTensor
	add := func(name string, shape ...int) { ts = append(ts, WanTensor{name, shape}) }
	conv3 := func(p string, cout, cin, kt, k int) {
		add(p+".weight", cout, cin, kt, k, k)
		add(p+".bias", cout)
	}
	res := func(p string, cin, cout int) {
		add(p+".residual.0.gamma", cin, 1, 1, 1)
		conv3(p+".residual.2", cout, cin, 3, 3)
		add(p+".residual.3.gamma", cout, 1, 1, 1)
		conv3(p+".residual.6", cout, cout, 3, 3)
		if cin != cout {
			conv3(p+".shortcut", cout, cin, 1, 1)
		}
	}
	conv2 := func(p string, cout, cin, k int) {
		add(p+".weight", cout, cin, k, k)
		add(p+".bias", cout)
	}
	middle := func(p string, c int) {
		res(p+".0", c, c)
		add(p+".1.norm.gamma", c, 1, 1)
		conv2(p+".1.to_qkv", 3*c, c, 1)
		conv2(p+".1.proj", c, c, 1)
		res(p+".2", c, c)
	}
	dims := []int{96, 192, 384, 384}
	// Encoder3d.
	conv3("encoder.conv1", 96, 3, 3, 3)
	i, cin := 0, 96
	for s, c := range dims {
		for range 2 {
			res("encoder.downsamples."+strconv.Itoa(i), cin, c)
			cin = c
			i++
		}
		if s < 3 {
			p := "encoder.downsamples." + strconv.Itoa(i)
			conv2(p+".resample.1", c, c, 3)
			if s > 0 {
				conv3(p+".time_conv", c, c, 3, 1)
			}
			i++
		}
	}
	middle("encoder.middle", 384)
	add("encoder.head.0.gamma", 384, 1, 1, 1)
	conv3("encoder.head.2", 32, 384, 3, 3)
	conv3("conv1", 32, 32, 1, 1)
	conv3("conv2", 16, 16, 1, 1)
	// Decoder3d.
	conv3("decoder.conv1", 384, 16, 3, 3)
	middle("decoder.middle", 384)
	i, cin = 0, 384
	for s, c := range []int{384, 384, 192, 96} {
		if s > 0 {
			cin /= 2
		}
		for range 3 {
			res("decoder.upsamples."+strconv.Itoa(i), cin, c)
			cin = c
			i++
		}
		if s < 3 {
			p := "decoder.upsamples." + strconv.Itoa(i)
			conv2(p+".resample.1", c/2, c, 3)
			if s < 2 {
				conv3(p+".time_conv", 2*c, c, 3, 1)
			}
			i++
		}
	}
	add("decoder.head.0.gamma", 96, 1, 1, 1)
	conv3("decoder.head.2", 3, 96, 3, 3)
	return ts
}
