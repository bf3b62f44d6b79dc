//go:build !race

package series

const raceEnabled = false
