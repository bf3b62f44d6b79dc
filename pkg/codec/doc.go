// Package codec owns Quiver's body-buffer compression: pooled zstd and LZ4
// frame encoders behind an append-style API, one pool per codec and effective
// level; and the facts of the codec settings: the names (Names,
// DefaultKind), and what codec Auto means, its cost model's constants and the
// preferences that price a wire byte (auto.go), which package arrowipc
// applies per batch.
//
// Encoders are expensive to build (a zstd encoder allocates its match tables,
// about 2 MB at the default level) and cheap to reuse, so every Codec value
// draws from a process-wide pool keyed by (kind, effective level). Encoders
// are built for single-threaded, whole-buffer use, reset before they go back
// to their pool, and never rebuilt per frame.
//
// codec is a leaf: it imports the standard library and the compression
// libraries only, never another Quiver package, arrow-go or the SDK.
package codec
