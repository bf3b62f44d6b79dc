//go:build quiver_poison

package series

// Poisoned: built with the quiver_poison tag (tests only), memory given
// back for reuse (lent arrays, the split's scratch, a stream's bodies) is
// overwritten with poison first, so that whatever still reads it reads
// the poison, not by luck the values it held or those of its next user.
const Poisoned = true

// Poison overwrites b with 0xA5 bytes when Poisoned.
func Poison(b []byte) {
	for i := range b {
		b[i] = 0xA5
	}
}
