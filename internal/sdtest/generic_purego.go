//go:build purego

package sdtest

// generic is set when the build runs the kernels' generic Go twins.
const generic = true
