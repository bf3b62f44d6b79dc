//go:build race

package codec

// raceEnabled: the race detector makes sync.Pool drop items at random, so
// allocation counts are only meaningful without it (mage goTest runs the
// allocation tests again without -race).
const raceEnabled = true
