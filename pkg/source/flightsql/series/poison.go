//go:build quiver_poison

package series

// Poison, built with the quiver_poison tag (tests only), overwrites memory
// given back for reuse (lent arrays, the split's scratch, a stream's
// bodies) with 0xA5 bytes, so that whatever still reads it reads the
// poison, not by luck the values it held or those of its next user.
func Poison(b []byte) {
	for i := range b {
		b[i] = 0xA5
	}
}
