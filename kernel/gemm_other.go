//go:build !amd64 || purego

package kernel

func packAsm(p *WPack, w []byte, rowBytes, r0 int) bool { return false }
