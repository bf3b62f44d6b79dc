//go:build !race

package frame_test

const raceEnabled = false
