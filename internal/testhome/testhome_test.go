package testhome

import (
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/glassbox-ai/glassbox/internal/home"
)

func TestMain(m *testing.M) { Main(m) }

// TestHomeIsTemporary checks that Main points the home away from the
// user's: a temporary folder of this test binary's.
func TestHomeIsTemporary(t *testing.T) {
	dir := home.Home()
	if !strings.HasPrefix(filepath.Base(dir), "glassbox-test-home-") || filepath.Dir(dir) != filepath.Clean(os.TempDir()) {
		t.Fatalf("home during tests is %s, not a temporary folder", dir)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("temporary home %s: %v", dir, err)
	}
	if h, err := os.UserHomeDir(); err == nil && strings.HasPrefix(dir, filepath.Join(h, ".glassbox")) {
		t.Fatalf("home during tests %s is the user's", dir)
	}
}

const module = "github.com/glassbox-ai/glassbox"

// exempt are packages whose tests reach the home but cannot use Main:
// internal/home's own test sets $GLASSBOX_HOME itself (and testhome
// imports it).
var exempt = map[string]bool{"internal/home": true}

// TestEveryPackageUsesIt fails for a package whose tests can write into the
// glassbox home — they import internal/home through any chain of the
// module's packages, or they start processes with os/exec — and whose
// TestMain does not call Main or Run.
func TestEveryPackageUsesIt(t *testing.T) {
	root := filepath.Join("..", "..")
	pkgs := modulePackages(t, root)
	reaches := map[string]bool{} // memo: a package's non-test imports reach internal/home
	var reach func(pkg string) bool
	reach = func(pkg string) bool {
		if v, ok := reaches[pkg]; ok {
			return v
		}
		reaches[pkg] = false // cycles cannot occur, but never loop
		bp := pkgs[pkg]
		if pkg == "internal/home" {
			reaches[pkg] = true
			return true
		}
		if bp == nil {
			return false
		}
		for _, imp := range bp.Imports {
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && reach(rel) {
				reaches[pkg] = true
				return true
			}
		}
		return false
	}
	var names []string
	for n := range pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	checked := 0
	for _, pkg := range names {
		bp := pkgs[pkg]
		if len(bp.TestGoFiles)+len(bp.XTestGoFiles) == 0 || exempt[pkg] {
			continue
		}
		why := ""
		for _, imp := range append(append([]string{}, bp.TestImports...), bp.XTestImports...) {
			if imp == "os/exec" {
				why = "its tests start processes (os/exec)"
			}
			if rel, ok := strings.CutPrefix(imp, module+"/"); ok && why == "" && reach(rel) {
				why = "its tests import " + rel + ", which reaches internal/home"
			}
		}
		if why == "" && reach(pkg) {
			why = "it reaches internal/home"
		}
		if why == "" {
			continue
		}
		checked++
		if !callsMain(t, filepath.Join(root, pkg), append(append([]string{}, bp.TestGoFiles...), bp.XTestGoFiles...)) {
			t.Errorf("%s: %s, but no TestMain calls testhome.Main or testhome.Run: its tests would write into the user's ~/.glassbox (add func TestMain(m *testing.M) { testhome.Main(m) })", pkg, why)
		}
	}
	if checked < 5 {
		t.Errorf("only %d packages reach the home: the scan is broken", checked)
	}
}

// modulePackages maps each package directory of the module (relative,
// slash-separated) to its build information.
func modulePackages(t *testing.T, root string) map[string]*build.Package {
	pkgs := map[string]*build.Package{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(p, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(root, p)
		pkgs[filepath.ToSlash(rel)] = bp
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// callsMain reports whether one of files (in dir) has a TestMain that
// calls testhome.Main or testhome.Run.
func callsMain(t *testing.T, dir string, files []string) bool {
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		local := "" // the name testhome is imported under
		for _, imp := range f.Imports {
			if imp.Path.Value == `"`+module+`/internal/testhome"` {
				local = "testhome"
				if imp.Name != nil {
					local = imp.Name.Name
				}
			}
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "TestMain" || fn.Recv != nil || fn.Body == nil {
				continue
			}
			found := false
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch fun := call.Fun.(type) {
				case *ast.SelectorExpr:
					if x, ok := fun.X.(*ast.Ident); ok && local != "" && x.Name == local && (fun.Sel.Name == "Main" || fun.Sel.Name == "Run") {
						found = true
					}
				case *ast.Ident: // this package's own test
					if f.Name.Name == "testhome" && (fun.Name == "Main" || fun.Name == "Run") {
						found = true
					}
				}
				return true
			})
			if found {
				return true
			}
		}
	}
	return false
}
