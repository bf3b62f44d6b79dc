//go:build race

package flightsql

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// what a pool gives back is only measurable without it.
const raceEnabled = true
