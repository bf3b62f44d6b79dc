//go:build !quiver_poison

package series

// Poisoned: see poison.go (the quiver_poison build tag).
const Poisoned = false

// Poison does nothing without the quiver_poison tag.
func Poison([]byte) {}
