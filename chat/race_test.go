//go:build race

package chat

// raceEnabled: the race detector maps terabytes of shadow memory, so no
// address-space limit can be set.
const raceEnabled = true
