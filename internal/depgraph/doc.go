// Package depgraph holds the test that pins glassbox's import graph to the
// package table in docs/ARCHITECTURE.md: every package of the module must
// have a row, and may import only the packages its "may import" column
// names (module packages by path relative to the module root, third-party
// modules by their import path prefix, "stdlib" for the standard library
// alone, "everything" for no limit). A row may name a family as `model/*`.
package depgraph
