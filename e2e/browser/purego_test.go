//go:build purego

package browser

const puregoBuild = true
