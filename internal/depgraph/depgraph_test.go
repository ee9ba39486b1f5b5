package depgraph

import (
	"go/build"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/glassbox-ai/glassbox"

// rule is one row of the architecture table.
type rule struct {
	pattern string   // "gguf", "model/*"
	allowed []string // import paths relative to the module, or third-party prefixes
	any     bool     // "everything"
}

func (r rule) matches(pkg string) bool {
	if p, ok := strings.CutSuffix(r.pattern, "/*"); ok {
		return pkg == p || strings.HasPrefix(pkg, p+"/")
	}
	return pkg == r.pattern
}

func root(t *testing.T) string {
	wd, _ := os.Getwd()
	return filepath.Join(wd, "..", "..")
}

var cellRE = regexp.MustCompile("`([^`]+)`")

// readRules parses the package table of docs/ARCHITECTURE.md.
func readRules(t *testing.T, dir string) []rule {
	b, err := os.ReadFile(filepath.Join(dir, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rules []rule
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| package |") {
			in = true
			continue
		}
		if !in {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			in = false
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
			continue
		}
		names := cellRE.FindAllStringSubmatch(cells[0], -1)
		last := cells[len(cells)-1]
		var r rule
		r.any = strings.Contains(last, "everything")
		for _, m := range cellRE.FindAllStringSubmatch(last, -1) {
			r.allowed = append(r.allowed, m[1])
		}
		for _, n := range names {
			rr := r
			rr.pattern = n[1]
			rules = append(rules, rr)
		}
	}
	if len(rules) == 0 {
		t.Fatal("no package table found in docs/ARCHITECTURE.md")
	}
	return rules
}

func isStd(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func TestImportGraph(t *testing.T) {
	dir := root(t)
	rules := readRules(t, dir)
	var pkgs []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != dir && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
			return filepath.SkipDir
		}
		if _, err := build.ImportDir(p, 0); err == nil {
			rel, _ := filepath.Rel(dir, p)
			pkgs = append(pkgs, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		if strings.HasPrefix(pkg, "internal/depgraph") || pkg == "." {
			continue
		}
		var r *rule
		for i := range rules {
			if rules[i].matches(pkg) {
				r = &rules[i]
				break
			}
		}
		if r == nil {
			t.Errorf("package %s has no row in docs/ARCHITECTURE.md's package table", pkg)
			continue
		}
		if r.any {
			continue
		}
		bp, _ := build.ImportDir(filepath.Join(dir, pkg), 0)
		for _, imp := range bp.Imports { // non-test imports only
			if isStd(imp) {
				continue
			}
			target, internal := strings.CutPrefix(imp, module+"/")
			ok := false
			for _, a := range r.allowed {
				if internal && (target == a || (strings.HasSuffix(a, "/*") && strings.HasPrefix(target, strings.TrimSuffix(a, "*")))) {
					ok = true
				}
				if !internal && strings.HasPrefix(imp, a) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s imports %s, which its row in docs/ARCHITECTURE.md does not allow (%v)", pkg, imp, r.allowed)
			}
		}
	}
}
