//go:build !unix

package vae

import "time"

func cpuTime() time.Duration { return 0 }
