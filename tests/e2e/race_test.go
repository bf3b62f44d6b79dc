//go:build race

package e2e

// raceEnabled: this process runs under the race detector. The plugin
// binary the tests drive never does (harness.Build).
const raceEnabled = true
