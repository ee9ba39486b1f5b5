package server

import (
	"bytes"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"strings"
	"testing"
)

// rowPNG is a w×h grey PNG whose every row is vals (len w).
func rowPNG(t *testing.T, vals []uint8, h int) []byte {
	t.Helper()
	im := image.NewGray(image.Rect(0, 0, len(vals), h))
	for y := range h {
		copy(im.Pix[y*im.Stride:], vals)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, im); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// pngRows decodes a PNG into its rows of red values, checking the picture
// is grey and opaque.
func pngRows(t *testing.T, b []byte) [][]int {
	t.Helper()
	im, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	var rows [][]int
	bd := im.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		var row []int
		for x := bd.Min.X; x < bd.Max.X; x++ {
			c := color.NRGBAModel.Convert(im.At(x, y)).(color.NRGBA)
			if c.R != c.G || c.G != c.B || c.A != 255 {
				t.Fatalf("pixel (%d, %d) is %v, want grey and opaque", x, y, c)
			}
			row = append(row, int(c.R))
		}
		rows = append(rows, row)
	}
	return rows
}

// TestScalePicture: ImageScale's methods on small pictures, against values
// worked by hand from PyTorch's F.interpolate (align_corners false): the
// source position of output o is (o+½)·in/out (−½ for the linear ones).
func TestScalePicture(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []uint8
		inH    int
		method string
		w, h   int
		center bool
		want   [][]int
	}{
		// Halving: nearest-exact takes samples 1 and 3 (⌊1.5·… ⌋ = ⌊(o+½)·2⌋),
		// bilinear the midpoints of 0–1 and 2–3, area the pairs' means.
		{"nearest-exact halves", []uint8{10, 20, 30, 40}, 1, "nearest-exact", 2, 1, false, [][]int{{20, 40}}},
		{"bilinear halves", []uint8{10, 20, 30, 40}, 1, "bilinear", 2, 1, false, [][]int{{15, 35}}},
		{"area halves", []uint8{10, 20, 30, 40}, 1, "area", 2, 1, false, [][]int{{15, 35}}},
		// 3 → 2 by area: [0, ⌈1.5⌉) and [⌊1.5⌋, 3): the middle sample in both.
		{"area 3 to 2", []uint8{0, 100, 200}, 1, "area", 2, 1, false, [][]int{{50, 150}}},
		// Doubling: bilinear's sources −¼ (clamped to 0), ¼, ¾, 1¼ (clamped).
		{"bilinear doubles", []uint8{0, 200}, 1, "bilinear", 4, 1, false, [][]int{{0, 50, 150, 200}}},
		{"nearest-exact doubles", []uint8{0, 200}, 1, "nearest-exact", 4, 1, false, [][]int{{0, 0, 200, 200}}},
		// The same size is the picture itself, every method.
		{"bicubic same size", []uint8{0, 90, 30, 255}, 2, "bicubic", 4, 2, false, [][]int{{0, 90, 30, 255}, {0, 90, 30, 255}}},
		{"bilinear same size", []uint8{0, 90, 30, 255}, 1, "bilinear", 4, 1, false, [][]int{{0, 90, 30, 255}}},
		// Bicubic doubling of a flat picture stays flat (the weights sum to 1).
		{"bicubic flat", []uint8{77, 77, 77}, 3, "bicubic", 6, 6, false, [][]int{
			{77, 77, 77, 77, 77, 77}, {77, 77, 77, 77, 77, 77}, {77, 77, 77, 77, 77, 77},
			{77, 77, 77, 77, 77, 77}, {77, 77, 77, 77, 77, 77}, {77, 77, 77, 77, 77, 77}}},
		// Bicubic doubling of a step, edges clamped: output 1 (source ¼) is
		// 255·(w2+w3) with the weights at ¼ (−0.10546875, 0.87890625,
		// 0.26171875, −0.03515625): 57.77 → 58; output 0 (source −¼: ¾
		// past sample −1) is 255·w3(¾) = 255·(−0.10546875), below 0,
		// clamped; the other two mirror these.
		{"bicubic step", []uint8{0, 255}, 1, "bicubic", 4, 1, false, [][]int{{0, 58, 197, 255}}},
		// Centre crop: 6×2 to 2×2 cuts round((6 − 6·⅓)/2) = 2 from each side.
		{"center crop", []uint8{1, 2, 3, 4, 5, 6}, 2, "nearest-exact", 2, 2, true, [][]int{{3, 4}, {3, 4}}},
		// Without the crop the whole row is squeezed.
		{"no crop", []uint8{1, 2, 3, 4, 5, 6}, 2, "nearest-exact", 2, 2, false, [][]int{{2, 5}, {2, 5}}},
		// A width of 0 keeps the aspect ratio: 4×2 at height 1 is 2×1.
		{"width 0", []uint8{10, 20, 30, 40}, 2, "area", 0, 1, false, [][]int{{15, 35}}},
		{"height 0", []uint8{10, 20, 30, 40}, 2, "area", 2, 0, false, [][]int{{15, 35}}},
		{"both 0", []uint8{10, 20, 30}, 1, "bilinear", 0, 0, false, [][]int{{10, 20, 30}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := scalePicture(rowPNG(t, tc.in, tc.inH), tc.method, tc.w, tc.h, tc.center)
			if err != nil {
				t.Fatal(err)
			}
			got := pngRows(t, out)
			if len(got) != len(tc.want) {
				t.Fatalf("%d rows %v, want %v", len(got), got, tc.want)
			}
			for y := range got {
				if len(got[y]) != len(tc.want[y]) {
					t.Fatalf("rows %v, want %v", got, tc.want)
				}
				for x := range got[y] {
					if d := got[y][x] - tc.want[y][x]; d < -1 || d > 1 {
						t.Fatalf("rows %v, want %v", got, tc.want)
					}
				}
			}
		})
	}
	// A PNG's alpha is dropped (ComfyUI's LoadImage converts to RGB): the
	// colour under a transparent pixel is kept.
	im := image.NewNRGBA(image.Rect(0, 0, 2, 1))
	copy(im.Pix, []uint8{200, 200, 200, 0, 100, 100, 100, 255})
	var b bytes.Buffer
	png.Encode(&b, im)
	out, err := scalePicture(b.Bytes(), "nearest-exact", 2, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := pngRows(t, out); got[0][0] != 200 || got[0][1] != 100 {
		t.Errorf("alpha: %v, want [200 100]", got)
	}
	// Too large a result, and not a picture: errors naming the numbers.
	if _, err := scalePicture(rowPNG(t, []uint8{1, 2}, 1), "bilinear", 5000, 10, false); err == nil || !strings.Contains(err.Error(), "5000×10") || !strings.Contains(err.Error(), "4096") {
		t.Errorf("5000×10: %v", err)
	}
	if _, err := scalePicture(rowPNG(t, []uint8{1, 2}, 1), "area", 1, 1000, true); err == nil || !strings.Contains(err.Error(), "leaves 0×1") {
		t.Errorf("a crop to nothing: %v", err)
	}
	// Every small shape, method and crop: no panic, the asked-for size.
	for inW := 1; inW <= 4; inW++ {
		for inH := 1; inH <= 3; inH++ {
			pic := rowPNG(t, bytes.Repeat([]uint8{9}, inW), inH)
			for w := 0; w <= 5; w++ {
				for h := 0; h <= 5; h++ {
					for _, m := range comfyScaleMethods {
						for _, center := range []bool{false, true} {
							out, err := scalePicture(pic, m, w, h, center)
							if err != nil {
								if !strings.Contains(err.Error(), "leaves") {
									t.Errorf("%d×%d to %d×%d by %s: %v", inW, inH, w, h, m, err)
								}
								continue
							}
							rows := pngRows(t, out)
							if (w != 0 && len(rows[0]) != w) || (h != 0 && len(rows) != h) || rows[0][0] != 9 {
								t.Errorf("%d×%d to %d×%d by %s (crop %v): %v", inW, inH, w, h, m, center, rows)
							}
						}
					}
				}
			}
		}
	}
	if _, err := scalePicture([]byte("GIF89a"), "bilinear", 8, 8, false); err == nil || !strings.Contains(err.Error(), "not a PNG or JPEG") {
		t.Errorf("a GIF: %v", err)
	}
}

// comfyScaled is comfyImg2Img with an ImageScale (node 12) between the
// LoadImage and the VAEEncode.
func comfyScaled(picture, method string, w, h int, crop string) map[string]any {
	g := comfyImg2Img(picture, 1)
	g["12"] = map[string]any{"class_type": "ImageScale", "inputs": map[string]any{"image": []any{"10", 0}, "upscale_method": method,
		"width": w, "height": h, "crop": crop}}
	node(g, "11")["pixels"] = []any{"12", 0}
	return g
}

// TestComfyUIImageScale: LoadImage → ImageScale → VAEEncode is an img2img
// job whose init image is the scaled picture; two ImageScales chain; the
// methods glassbox does not run, bad settings, a link to LoadImage's MASK
// and a chain that links back into itself are refused at validation naming
// the node and input; /object_info describes the node.
func TestComfyUIImageScale(t *testing.T) {
	f := newImageFake(t)
	ts, _ := startComfyInput(t, f, 0)
	if st, b := ts.upload("/upload/image", "row.png", rowPNG(t, []uint8{10, 20, 30, 40, 50, 60, 70, 80}, 4), nil); st != 200 {
		t.Fatalf("upload: %d %s", st, b)
	}
	run := func(t *testing.T, g map[string]any) ImageRequest {
		t.Helper()
		var created struct {
			PromptID string `json:"prompt_id"`
		}
		decode(t, ts.do("POST", "/prompt", map[string]any{"prompt": g}), 200, &created)
		var hist map[string]comfyEntry
		waitFor(t, "the prompt in the history", func() bool {
			decode(t, ts.do("GET", "/history/"+created.PromptID, nil), 200, &hist)
			return len(hist) == 1
		})
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.reqs[len(f.reqs)-1]
	}
	t.Run("area to 4x2", func(t *testing.T) {
		r := run(t, comfyScaled("row.png", "area", 4, 2, "disabled"))
		if got := pngRows(t, r.InitImage); len(got) != 2 || !equalInts(got[0], []int{15, 35, 55, 75}) || !equalInts(got[1], got[0]) {
			t.Errorf("init image %v", got)
		}
		if r.InitBytes != len(r.InitImage) || r.Strength != 1 || r.N != 1 {
			t.Errorf("the job ran %+v", r)
		}
	})
	t.Run("center crop, then a chained bilinear", func(t *testing.T) {
		g := comfyScaled("row.png", "nearest-exact", 4, 4, "center") // 8×4 → columns 2..5 → 4×4
		g["13"] = map[string]any{"class_type": "ImageScale", "inputs": map[string]any{"image": []any{"12", 0}, "upscale_method": "bilinear",
			"width": 2, "height": 0, "crop": "disabled"}}
		node(g, "11")["pixels"] = []any{"13", 0}
		r := run(t, g)
		// 30 40 50 60 halved by bilinear: the midpoints 35, 55; height 0 keeps the square.
		if got := pngRows(t, r.InitImage); len(got) != 2 || !equalInts(got[0], []int{35, 55}) {
			t.Errorf("init image %v", got)
		}
	})

	refused := func(t *testing.T, g map[string]any, id, input, typ string, contain ...string) {
		t.Helper()
		before := len(f.reqs)
		var out comfyRefused
		decode(t, ts.do("POST", "/prompt", map[string]any{"prompt": g}), 400, &out)
		ne, ok := out.NodeErrors[id]
		if !ok || len(ne.Errors) == 0 {
			t.Fatalf("node %s not in node_errors: %+v", id, out)
		}
		e := ne.Errors[0]
		b, _ := json.Marshal(out)
		if e.Type != typ || e.ExtraInfo["input_name"] != input {
			t.Errorf("node %s: %+v, want %s on %s", id, e, typ, input)
		}
		for _, c := range contain {
			if !strings.Contains(e.Details, c) {
				t.Errorf("%q does not name %q (%s)", e.Details, c, b)
			}
		}
		if len(f.reqs) != before {
			t.Error("a refused graph ran")
		}
	}
	t.Run("lanczos", func(t *testing.T) {
		refused(t, comfyScaled("row.png", "lanczos", 4, 4, "disabled"), "12", "upscale_method", "value_not_valid",
			`"lanczos"`, "nearest-exact, bilinear, area, bicubic")
	})
	t.Run("unknown method", func(t *testing.T) {
		refused(t, comfyScaled("row.png", "bislerp", 4, 4, "disabled"), "12", "upscale_method", "value_not_valid",
			`"bislerp"`, "lanczos", "glassbox runs nearest-exact")
	})
	t.Run("crop", func(t *testing.T) {
		refused(t, comfyScaled("row.png", "area", 4, 4, "edges"), "12", "crop", "value_not_valid", `"edges"`, "center")
	})
	t.Run("width out of range", func(t *testing.T) {
		refused(t, comfyScaled("row.png", "area", -4, 4, "disabled"), "12", "width", "value_not_valid", "-4", "0 to 16384")
	})
	t.Run("over glassbox's side", func(t *testing.T) {
		refused(t, comfyScaled("row.png", "area", 8192, 64, "disabled"), "12", "image", "value_not_valid", "8192×64", "4096")
	})
	t.Run("missing method", func(t *testing.T) {
		g := comfyScaled("row.png", "area", 4, 4, "disabled")
		delete(node(g, "12"), "upscale_method")
		refused(t, g, "12", "upscale_method", "required_input_missing")
	})
	t.Run("LoadImage's MASK", func(t *testing.T) {
		g := comfyScaled("row.png", "area", 4, 4, "disabled")
		node(g, "12")["image"] = []any{"10", 1}
		refused(t, g, "12", "image", "return_type_mismatch", `node "10" (LoadImage) output 1 is MASK`, "no node that takes a MASK")
	})
	t.Run("VAEEncode of LoadImage's MASK", func(t *testing.T) {
		g := comfyImg2Img("row.png", 1)
		node(g, "11")["pixels"] = []any{"10", 1}
		refused(t, g, "11", "pixels", "return_type_mismatch", `node "10" (LoadImage) output 1 is MASK, want IMAGE`, "unsupported")
	})
	t.Run("a cycle", func(t *testing.T) {
		g := comfyScaled("row.png", "area", 4, 4, "disabled")
		node(g, "12")["image"] = []any{"12", 0}
		refused(t, g, "12", "image", "bad_linked_input", "links back into itself")
	})
	t.Run("after the VAEDecode", func(t *testing.T) {
		g := comfyScaled("row.png", "area", 4, 4, "disabled")
		node(g, "12")["image"] = []any{"8", 0}
		node(g, "11")["pixels"] = []any{"10", 0}
		node(g, "9")["images"] = []any{"12", 0}
		refused(t, g, "9", "images", "return_type_mismatch", "ImageScale", "VAEDecode")
	})

	var info map[string]struct {
		Input struct {
			Required map[string][]any `json:"required"`
		} `json:"input"`
		Output   []string `json:"output"`
		Category string   `json:"category"`
	}
	decode(t, ts.do("GET", "/object_info/ImageScale", nil), 200, &info)
	n, ok := info["ImageScale"]
	if !ok || !equalStrings(n.Output, []string{"IMAGE"}) || n.Category != "image/upscaling" || len(n.Input.Required) != 5 {
		t.Fatalf("object_info: %+v", info)
	}
	if m, _ := json.Marshal(n.Input.Required["upscale_method"]); string(m) != `[["nearest-exact","bilinear","area","bicubic"]]` {
		t.Errorf("upscale_method's choices %s", m)
	}
	if m, _ := json.Marshal(n.Input.Required["crop"]); string(m) != `[["disabled","center"]]` {
		t.Errorf("crop's choices %s", m)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if d := a[i] - b[i]; d < -1 || d > 1 {
			return false
		}
	}
	return true
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }
