//go:build !unix

package wan

import "time"

func cpuTime() time.Duration { return 0 }
