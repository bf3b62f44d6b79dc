//go:build !race

package flightsql

const raceEnabled = false
