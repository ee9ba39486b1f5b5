package server

import (
	"bytes"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"slices"
	"strings"
)

// ComfyUI's ImageScale node (comfy_extras' core "image/upscaling"): the
// picture of its image input resized to width×height by upscale_method,
// after a centre crop to the new aspect ratio when crop is "center". A
// width or height of 0 keeps the aspect ratio (both 0: the picture as it
// is). glassbox runs it on the way to a VAEEncode: the scaled picture is
// the img2img job's init image (an 8-bit PNG, which is how the engine
// reads every init image).

// comfyScaleMethods are the upscale_method values glassbox runs, as
// PyTorch's F.interpolate computes them (align_corners false, no
// antialiasing); ComfyUI's others (lanczos) are refused naming these.
var comfyScaleMethods = []string{"nearest-exact", "bilinear", "area", "bicubic"}

// comfyAllScaleMethods are ComfyUI's own choices.
var comfyAllScaleMethods = []string{"nearest-exact", "bilinear", "area", "bicubic", "lanczos"}

const (
	comfyMaxScaleSide   = 16384   // ComfyUI's MAX_RESOLUTION: width and height
	comfyMaxScaleOut    = 4096    // an image job's largest side (EmptyLatentImage's)
	comfyMaxScaleInput  = 1 << 24 // pixels of a picture ImageScale reads (4096×4096)
	comfyMaxScaleChains = 16      // ImageScale nodes in one chain
)

// picture reads the picture node id (a LoadImage, or an ImageScale of
// one) makes: PNG or JPEG bytes. depth counts the ImageScale nodes above.
func (c *comfyCheck) picture(id string, depth int) ([]byte, bool) {
	if c.g[id].ClassType == "LoadImage" {
		return c.loadImage(id)
	}
	n := len(c.errs[id].Errors)
	method := c.str(id, "upscale_method")
	switch {
	case len(c.errs[id].Errors) > n: // missing, or not a string
	case slices.Contains(comfyScaleMethods, method):
	case slices.Contains(comfyAllScaleMethods, method):
		c.bad(id, "upscale_method", "%q: glassbox does not run it; it runs %s", method, strings.Join(comfyScaleMethods, ", "))
	default:
		c.bad(id, "upscale_method", "%q is not one of %s (glassbox runs %s)", method, strings.Join(comfyAllScaleMethods, ", "), strings.Join(comfyScaleMethods, ", "))
	}
	w := c.whole(id, "width", 512, 0, comfyMaxScaleSide)
	h := c.whole(id, "height", 512, 0, comfyMaxScaleSide)
	n = len(c.errs[id].Errors)
	crop := c.str(id, "crop")
	if len(c.errs[id].Errors) == n && crop != "disabled" && crop != "center" {
		c.bad(id, "crop", "%q: want \"disabled\" or \"center\"", crop)
	}
	if depth >= comfyMaxScaleChains {
		c.fail("bad_linked_input", id, "image", "a chain of more than %d ImageScale nodes (or one that links back into itself)", comfyMaxScaleChains)
		return nil, false
	}
	src, ok := c.link(id, "image", "IMAGE", "LoadImage", "ImageScale")
	if !ok {
		return nil, false
	}
	b, ok := c.picture(src, depth+1)
	if !ok || len(c.errs[id].Errors) > 0 {
		return nil, false
	}
	out, err := scalePicture(b, method, w, h, crop == "center")
	if err != nil {
		c.bad(id, "image", "%v", err)
		return nil, false
	}
	return out, true
}

// loadImage reads a LoadImage node's picture from the input folder.
func (c *comfyCheck) loadImage(li string) ([]byte, bool) {
	ref := strings.TrimSuffix(c.str(li, "image"), " [input]") // ComfyUI's annotated name
	if ref == "" {
		c.bad(li, "image", "no picture named: POST /upload/image keeps one in the input folder, then name it here")
		return nil, false
	}
	b, e := c.load(ref)
	if e != nil {
		c.bad(li, "image", "Invalid image file: %s", e.Message)
		return nil, false
	}
	if _, _, e := checkPicture("input image", ref, b); e != nil {
		c.bad(li, "image", "Invalid image file: %s", e.Message)
		return nil, false
	}
	return b, true
}

// scalePicture is ImageScale on a PNG or JPEG: the picture's RGB (a PNG's
// alpha dropped, as ComfyUI's LoadImage drops it) cropped and resized,
// as an 8-bit PNG.
func scalePicture(b []byte, method string, w, h int, center bool) ([]byte, error) {
	f, cfg, e := checkPicture("ImageScale", "image", b)
	if e != nil {
		return nil, fmt.Errorf("%s", e.Message)
	}
	if n := cfg.Width * cfg.Height; n > comfyMaxScaleInput {
		return nil, fmt.Errorf("ImageScale: the picture is %d×%d (%d pixels), over the %d glassbox scales: resize it before the upload",
			cfg.Width, cfg.Height, n, comfyMaxScaleInput)
	}
	var im image.Image
	var err error
	if f == "png" {
		im, err = png.Decode(bytes.NewReader(b))
	} else {
		im, err = jpeg.Decode(bytes.NewReader(b))
	}
	if err != nil {
		return nil, fmt.Errorf("ImageScale: decoding the %s: %v", f, err)
	}
	inW, inH := im.Bounds().Dx(), im.Bounds().Dy()
	switch {
	case w == 0 && h == 0:
		w, h = inW, inH
	case w == 0:
		w = max(1, int(math.RoundToEven(float64(inW)*float64(h)/float64(inH))))
	case h == 0:
		h = max(1, int(math.RoundToEven(float64(inH)*float64(w)/float64(inW))))
	}
	if w > comfyMaxScaleOut || h > comfyMaxScaleOut {
		return nil, fmt.Errorf("ImageScale: %d×%d from a %d×%d picture: glassbox's images are at most %d pixels a side", w, h, inW, inH, comfyMaxScaleOut)
	}
	planes := rgbPlanes(im)
	x0, y0, cw, ch := 0, 0, inW, inH
	if center {
		x0, y0, cw, ch = centerCrop(inW, inH, w, h)
		if cw < 1 || ch < 1 {
			return nil, fmt.Errorf("ImageScale: the centre crop of the %d×%d picture to the shape of %d×%d leaves %d×%d pixels",
				inW, inH, w, h, cw, ch)
		}
	}
	var out [3][]float32
	for i, p := range planes {
		out[i] = resizePlane(p, inW, x0, y0, cw, ch, w, h, method)
	}
	dst := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range w * h {
		for c := range 3 {
			dst.Pix[4*i+c] = uint8(math.Round(float64(min(max(out[c][i], 0), 1)) * 255))
		}
		dst.Pix[4*i+3] = 255
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, dst); err != nil {
		return nil, fmt.Errorf("ImageScale: encoding the %d×%d result: %v", w, h, err)
	}
	return buf.Bytes(), nil
}

// rgbPlanes is a picture's red, green and blue in [0, 1], read as the
// image engine reads an init image: a non-premultiplied picture's colour
// as stored, any other's 8 bits of its RGBA.
func rgbPlanes(im image.Image) [3][]float32 {
	b := im.Bounds()
	w, h := b.Dx(), b.Dy()
	var p [3][]float32
	for c := range p {
		p[c] = make([]float32, w*h)
	}
	nrgba, _ := im.(*image.NRGBA)
	for y := range h {
		for x := range w {
			var r, g, bl uint32
			if nrgba != nil {
				o := nrgba.PixOffset(b.Min.X+x, b.Min.Y+y)
				r, g, bl = uint32(nrgba.Pix[o]), uint32(nrgba.Pix[o+1]), uint32(nrgba.Pix[o+2])
			} else {
				r, g, bl, _ = im.At(b.Min.X+x, b.Min.Y+y).RGBA()
				r, g, bl = r>>8, g>>8, bl>>8
			}
			i := y*w + x
			p[0][i], p[1][i], p[2][i] = float32(r)/255, float32(g)/255, float32(bl)/255
		}
	}
	return p
}

// centerCrop is ComfyUI's centre crop of an inW×inH picture to the aspect
// ratio of w×h: the same share cut from both sides of the longer axis.
func centerCrop(inW, inH, w, h int) (x0, y0, cw, ch int) {
	old := float64(inW) / float64(inH)
	want := float64(w) / float64(h)
	switch {
	case old > want:
		x0 = int(math.RoundToEven((float64(inW) - float64(inW)*(want/old)) / 2))
	case old < want:
		y0 = int(math.RoundToEven((float64(inH) - float64(inH)*(old/want)) / 2))
	}
	return x0, y0, inW - 2*x0, inH - 2*y0
}

// taps are one output sample's source indices and weights along an axis.
type taps struct {
	idx []int
	w   []float32
}

// axisTaps are the taps of each of out samples from in along one axis
// (an offset into the crop added by the caller), as F.interpolate
// computes them with size given: scale in/out, align_corners false.
func axisTaps(in, out int, method string) []taps {
	scale := float64(in) / float64(out)
	clamp := func(i int) int { return min(max(i, 0), in-1) }
	t := make([]taps, out)
	for o := range out {
		switch method {
		case "nearest-exact":
			t[o] = taps{[]int{clamp(int(math.Floor((float64(o) + 0.5) * scale)))}, []float32{1}}
		case "bilinear":
			src := max((float64(o)+0.5)*scale-0.5, 0)
			i0 := int(src)
			l := float32(src - float64(i0))
			t[o] = taps{[]int{clamp(i0), clamp(i0 + 1)}, []float32{1 - l, l}}
		case "bicubic":
			src := (float64(o)+0.5)*scale - 0.5
			i0 := int(math.Floor(src))
			x := src - float64(i0)
			k := cubicWeights(x)
			t[o] = taps{[]int{clamp(i0 - 1), clamp(i0), clamp(i0 + 1), clamp(i0 + 2)}, k[:]}
		default: // area: adaptive average pooling
			start, end := o*in/out, ((o+1)*in+out-1)/out
			tp := taps{}
			for i := start; i < end; i++ {
				tp.idx = append(tp.idx, i)
				tp.w = append(tp.w, 1/float32(end-start))
			}
			t[o] = tp
		}
	}
	return t
}

// cubicWeights are the cubic convolution weights (A = −0.75, PyTorch's)
// of the four samples around a point x past the second.
func cubicWeights(x float64) [4]float32 {
	const a = -0.75
	near := func(d float64) float64 { return ((a+2)*d-(a+3))*d*d + 1 }
	far := func(d float64) float64 { return ((a*d-5*a)*d+8*a)*d - 4*a }
	return [4]float32{float32(far(x + 1)), float32(near(x)), float32(near(1 - x)), float32(far(2 - x))}
}

// resizePlane resizes the cw×ch crop at (x0, y0) of a plane stride
// samples wide to w×h: along x, then along y.
func resizePlane(p []float32, stride, x0, y0, cw, ch, w, h int, method string) []float32 {
	tx, ty := axisTaps(cw, w, method), axisTaps(ch, h, method)
	mid := make([]float32, w*ch)
	for y := range ch {
		row := p[(y0+y)*stride+x0:]
		for x, t := range tx {
			var s float32
			for k, i := range t.idx {
				s += t.w[k] * row[i]
			}
			mid[y*w+x] = s
		}
	}
	out := make([]float32, w*h)
	for y, t := range ty {
		for x := range w {
			var s float32
			for k, i := range t.idx {
				s += t.w[k] * mid[i*w+x]
			}
			out[y*w+x] = s
		}
	}
	return out
}
