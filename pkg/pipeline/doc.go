// Package pipeline turns a query's frames into encoded frames: it is the
// sink a source writes into (limits, the hand-off to the encode workers,
// the held-back first frame that carries the query's stats unless the
// query is streamed, frames handed over in parts, records lent instead of
// copied), the fixed set of long-lived encode workers every query of the
// process shares, and the process-wide memory budget every frame holds
// until its taker releases it.
//
// It is handed what it depends on: a Query names its source, its encoders
// (Encoders, one pool per data source) and where to report what encoding
// did; New takes the budget's settings, an Observer for the budget's
// metrics and a logger for panics. It imports neither the SDK's backend
// packages nor gRPC: the plugin wiring (package plugin) keeps the gRPC
// edge, the instances, health checks and resources, and decides what a
// Frame becomes on the wire.
//
// Arrows: frame, arrowipc, settings and source; nothing of the plugin.
package pipeline
