package image

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/glassbox-ai/glassbox/internal/atomicfile"
	"github.com/glassbox-ai/glassbox/internal/home"
)

// hashCache remembers files' SHA-256 by path, size and modification time
// in the glassbox home (sha256-cache.json), as A1111 keeps its
// cache.json of checkpoint hashes: hashing a 2 GB checkpoint takes
// seconds, and the PNG's "Model hash" needs it every run.
var hashCache sync.Mutex

type hashEntry struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime_ns"`
	SHA256  string `json:"sha256"`
}

// FileSHA256 returns path's SHA-256 in hex, from the cache when the file
// has the size and modification time it had when hashed.
func FileSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	abs, _ := filepath.Abs(path)
	cachePath := filepath.Join(home.Home(), "sha256-cache.json")
	hashCache.Lock()
	defer hashCache.Unlock()
	cache := map[string]hashEntry{}
	if b, err := os.ReadFile(cachePath); err == nil {
		json.Unmarshal(b, &cache) // a damaged cache is rebuilt
	}
	if e, ok := cache[abs]; ok && e.Size == st.Size() && e.ModTime == st.ModTime().UnixNano() && len(e.SHA256) == 64 {
		return e.SHA256, nil
	}
	sum, _, err := atomicfile.SHA256(path)
	if err != nil {
		return "", err
	}
	if st.Size() >= 64<<20 { // small files are hashed again rather than cached
		cache[abs] = hashEntry{Size: st.Size(), ModTime: st.ModTime().UnixNano(), SHA256: sum}
		if b, err := json.Marshal(cache); err == nil {
			os.MkdirAll(filepath.Dir(cachePath), 0o755)
			atomicfile.Write(cachePath, 0o644, func(w io.Writer) error { _, err := w.Write(b); return err })
		}
	}
	return sum, nil
}
