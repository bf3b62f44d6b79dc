// Package arrowipctest reads back what package arrowipc writes, for tests:
// Inspect reports what each record batch of an Arrow IPC file declares (its
// codec) and how its buffers are stored. It shares the format's slots with
// arrowipc (pkg/arrowipc/internal/format) and imports nothing else of
// Quiver; production code does not import it.
package arrowipctest
