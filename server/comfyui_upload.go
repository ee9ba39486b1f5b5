package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ComfyUI's input folder: POST /upload/image keeps a picture there for a
// LoadImage node to read, GET /view?type=input serves it back. The folder
// is Config.InputDir ($GLASSBOX_HOME/input by default), and every access to
// it goes through an os.Root, so no name — "..", an absolute path, or a
// symbolic link planted in the folder — reaches a file outside it. Names
// are also checked before the Root sees them, so a hostile one is a 400
// that says what is wrong with it rather than a bare "path escapes".

// maxUploadSide bounds an uploaded picture's width and height (as its
// header declares them): a small file can declare a huge image.
const maxUploadSide = 16384

// maxNameBytes bounds one element of an input name (ext4's limit).
const maxNameBytes = 255

// comfyUpload is POST /upload/image: a multipart form with the file in
// "image" and optional "subfolder", "type" (only "input") and "overwrite"
// ("true" or "1": replace a file of that name; otherwise a taken name
// becomes "name (1).ext", as ComfyUI does). It answers
// {"name", "subfolder", "type"}; a body over Config.MaxBodyBytes is a 413,
// a file that is not a PNG or JPEG a 400.
func (s *Server) comfyUpload(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	if err := r.ParseMultipartForm(min(s.cfg.MaxBodyBytes, 32<<20)); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			w.Header().Set("Connection", "close")
			writeNativeError(w, &Error{Status: http.StatusRequestEntityTooLarge, Stage: "deliver", Code: "body_too_large",
				Message: fmt.Sprintf("upload/image: the body exceeds the limit of %d bytes", mb.Limit),
				Hint:    "send a smaller picture or start serve with a larger --max-body"})
			return
		}
		writeNativeError(w, badRequest("invalid_request", "", "upload/image: a multipart/form-data body with the picture in field \"image\" is required: %v", err))
		return
	}
	defer r.MultipartForm.RemoveAll()
	form := func(k string) string {
		if v := r.MultipartForm.Value[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if t := form("type"); t != "" && t != "input" {
		writeNativeError(w, badRequest("invalid_value", "type", "upload/image: type %q: glassbox keeps uploads in its input folder only (type \"input\")", t))
		return
	}
	files := r.MultipartForm.File["image"]
	if len(files) != 1 {
		writeNativeError(w, badRequest("invalid_request", "image", "upload/image: one file in field \"image\" is required (got %d)", len(files)))
		return
	}
	sub := form("subfolder")
	name := files[0].Filename
	if _, e := inputPath("upload/image", sub, name); e != nil {
		writeNativeError(w, e)
		return
	}
	f, err := files[0].Open()
	if err != nil {
		writeNativeError(w, badRequest("invalid_request", "image", "upload/image: reading the file: %v", err))
		return
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		writeNativeError(w, badRequest("invalid_request", "image", "upload/image: reading the file: %v", err))
		return
	}
	if _, _, e := checkPicture("upload/image", name, data); e != nil {
		writeNativeError(w, e)
		return
	}
	overwrite := form("overwrite") == "true" || form("overwrite") == "1"
	saved, e := s.saveInput(sub, name, data, overwrite)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"name": saved, "subfolder": sub, "type": "input"})
}

// inputPath checks an input file's subfolder and name and returns its path
// in the input folder (slash-separated); what names the caller in an
// error. Each element must be a plain name: not empty, ".", ".." or hidden
// (a leading dot: the upload's temporary files are such), without a slash,
// backslash, NUL or control character, valid UTF-8 of at most 255 bytes;
// the subfolder is at most 8 of them joined by "/".
func inputPath(what, sub, name string) (string, *Error) {
	if why := badElem(name); why != "" {
		return "", badRequest("invalid_value", "filename", "%s: file name %q: %s", what, trimName(name), why)
	}
	if sub == "" {
		return name, nil
	}
	elems := strings.Split(sub, "/")
	if len(elems) > 8 {
		return "", badRequest("invalid_value", "subfolder", "%s: subfolder %q: %d levels, at most 8", what, trimName(sub), len(elems))
	}
	for _, el := range elems {
		if why := badElem(el); why != "" {
			return "", badRequest("invalid_value", "subfolder", "%s: subfolder %q: %s", what, trimName(sub), why)
		}
	}
	return sub + "/" + name, nil
}

// badElem is what is wrong with one element of an input name (see
// inputPath), or "".
func badElem(el string) string {
	switch {
	case el == "":
		return "an empty name (or an absolute path)"
	case el == "." || el == "..":
		return fmt.Sprintf("%q would leave the input folder", el)
	case strings.HasPrefix(el, "."):
		return "a name may not begin with a dot"
	case len(el) > maxNameBytes:
		return fmt.Sprintf("a name of %d bytes, at most %d", len(el), maxNameBytes)
	case !utf8.ValidString(el):
		return "not UTF-8"
	case strings.ContainsAny(el, "/\\"):
		return "a name may not hold a slash or backslash"
	case strings.ContainsFunc(el, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "a control character"
	case filepath.IsAbs(el) || !filepath.IsLocal(el):
		return "not a name inside the input folder"
	}
	return ""
}

// trimName shortens a name for an error message.
func trimName(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// checkPicture reads a PNG's or JPEG's header: the format, width and
// height; anything else is a 400 naming the first bytes it found.
func checkPicture(what, name string, b []byte) (string, image.Config, *Error) {
	var (
		c   image.Config
		err error
		f   string
	)
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")):
		f = "png"
		c, err = png.DecodeConfig(bytes.NewReader(b))
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		f = "jpeg"
		c, err = jpeg.DecodeConfig(bytes.NewReader(b))
	default:
		head := b[:min(len(b), 8)]
		return "", c, badRequest("unsupported_image", "image", "%s: %q (%d bytes) is not a PNG or JPEG: it begins % x",
			what, trimName(name), len(b), head)
	}
	if err != nil {
		return "", c, badRequest("unsupported_image", "image", "%s: %q (%d bytes): a broken %s header: %v", what, trimName(name), len(b), f, err)
	}
	if c.Width < 1 || c.Height < 1 || c.Width > maxUploadSide || c.Height > maxUploadSide {
		return "", c, badRequest("unsupported_image", "image", "%s: %q is %d×%d: each side must be 1 to %d pixels",
			what, trimName(name), c.Width, c.Height, maxUploadSide)
	}
	return f, c, nil
}

// inputRoot opens the input folder (creating it), confined.
func (s *Server) inputRoot() (*os.Root, *Error) {
	if err := os.MkdirAll(s.cfg.InputDir, 0o700); err != nil {
		return nil, &Error{Status: http.StatusInternalServerError, Stage: "deliver", Code: "internal",
			Message: fmt.Sprintf("the input folder %s: %v", s.cfg.InputDir, err), Err: err}
	}
	root, err := os.OpenRoot(s.cfg.InputDir)
	if err != nil {
		return nil, &Error{Status: http.StatusInternalServerError, Stage: "deliver", Code: "internal",
			Message: fmt.Sprintf("the input folder %s: %v", s.cfg.InputDir, err), Err: err}
	}
	return root, nil
}

// rootError is a confined file operation's failure: a name that escapes
// (through a symbolic link) is the request's fault.
func rootError(what, name string, err error) *Error {
	if errors.Is(err, fs.ErrNotExist) {
		return &Error{Status: http.StatusNotFound, Stage: "deliver", Code: "not_found", Param: "filename",
			Message: fmt.Sprintf("%s: %q is not in the input folder (POST /upload/image puts it there)", what, trimName(name))}
	}
	var pe *os.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return badRequest("invalid_value", "filename", "%s: %q leads out of the input folder (through a symbolic link)", what, trimName(name))
	}
	return &Error{Status: http.StatusInternalServerError, Stage: "deliver", Code: "internal",
		Message: fmt.Sprintf("%s: %q: %v", what, trimName(name), err), Err: err}
}

// saveInput writes an upload under sub, and returns the name it has there
// (another than name when name is taken and overwrite is false).
func (s *Server) saveInput(sub, name string, data []byte, overwrite bool) (string, *Error) {
	root, e := s.inputRoot()
	if e != nil {
		return "", e
	}
	defer root.Close()
	dir := "."
	if sub != "" {
		dir = filepath.FromSlash(sub)
		if err := root.MkdirAll(dir, 0o700); err != nil {
			return "", rootError("upload/image: the subfolder", sub, err)
		}
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(dir, ".upload-"+hex.EncodeToString(rnd[:]))
	if err := writeExcl(root, tmp, data); err != nil {
		return "", rootError("upload/image", path.Join(sub, name), err)
	}
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 0; i < 10000; i++ {
		final := name
		if i > 0 {
			final = fmt.Sprintf("%s (%d)%s", stem, i, ext)
			if len(final) > maxNameBytes {
				break
			}
		}
		target := filepath.Join(dir, final)
		if !overwrite {
			// Link, not rename: it fails on a taken name, so two uploads
			// of one name at once never replace each other.
			err := root.Link(tmp, target)
			if err != nil && !errors.Is(err, fs.ErrExist) && !strings.Contains(err.Error(), "escapes") {
				// A file system without hard links: create the name
				// exclusively and write it there.
				err = writeExcl(root, target, data)
			}
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			root.Remove(tmp)
			if err != nil {
				return "", rootError("upload/image", path.Join(sub, final), err)
			}
			return final, nil
		}
		if err := root.Rename(tmp, target); err != nil {
			root.Remove(tmp)
			return "", rootError("upload/image", path.Join(sub, final), err)
		}
		return final, nil
	}
	root.Remove(tmp)
	return "", badRequest("invalid_value", "filename", "upload/image: every name like %q is taken in the input folder: send overwrite=true or another name", trimName(name))
}

// writeExcl writes data to a new file name in root (fs.ErrExist if taken).
func writeExcl(root *os.Root, name string, data []byte) error {
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		root.Remove(name)
	}
	return err
}

// readInput reads an input file (ref is "name" or "subfolder/name").
func (s *Server) readInput(ref string) ([]byte, *Error) {
	sub, name := "", ref
	if i := strings.LastIndexByte(ref, '/'); i >= 0 {
		sub, name = ref[:i], ref[i+1:]
	}
	p, e := inputPath("input image", sub, name)
	if e != nil {
		return nil, e
	}
	root, e := s.inputRoot()
	if e != nil {
		return nil, e
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(p))
	if err != nil {
		return nil, rootError("input image", p, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil, badRequest("invalid_value", "filename", "input image %q is not a file", trimName(p))
	} else if st.Size() > s.cfg.MaxBodyBytes {
		return nil, badRequest("invalid_value", "filename", "input image %q has %d bytes, over the upload limit of %d", trimName(p), st.Size(), s.cfg.MaxBodyBytes)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, rootError("input image", p, err)
	}
	return b, nil
}

// comfyViewInput is GET /view?type=input: an uploaded picture.
func (s *Server) comfyViewInput(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref := q.Get("filename")
	if sub := q.Get("subfolder"); sub != "" {
		ref = sub + "/" + ref
	}
	b, e := s.readInput(ref)
	if e != nil {
		writeNativeError(w, e)
		return
	}
	ct := "application/octet-stream"
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		ct = "image/png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8, 0xff}):
		ct = "image/jpeg"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.Write(b)
}

// inputFiles are the pictures at the top of the input folder, by name (as
// ComfyUI's LoadImage lists them).
func (s *Server) inputFiles() []string {
	out := []string{}
	root, e := s.inputRoot()
	if e != nil {
		return out
	}
	defer root.Close()
	ents, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return out
	}
	for _, ent := range ents {
		if ent.Type().IsRegular() && badElem(ent.Name()) == "" {
			out = append(out, ent.Name())
		}
	}
	return out
}
