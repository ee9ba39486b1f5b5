//go:build !unix

package journal

// alive cannot probe processes here; every owner is taken as gone, so a
// second glassbox process would mark the first one's running jobs as
// interrupted. Run one writer at a time on such systems.
func alive(pid int) bool { return false }
