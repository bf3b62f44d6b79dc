// Package series is the Flight SQL source's split into series: it takes the
// normalised record batches of one query's result, batch by batch as they
// arrive (Builder.Add), and at the end (Builder.Finish) hands the sink one
// timeseries-multi frame per (label set × value column) (format
// time_series) or one timeseries-wide frame (time_series_wide), with the
// $__timeGroup fill applied (Fill).
//
// It owns the time column (TimeColumn, TimeReader: timestamps, and integer
// Unix times read by their magnitude), the lookup of each row's series, the
// stores of the value columns with their segments and shared times, the
// series' order, the wide frame, the fill, and the pooled memory those use
// (Memory, one per source: its scratch and its arrays' pools; DirtyPool).
// What the split does with each Arrow type comes from package flightsql's
// registration, handed in as Config.Types (see Type).
// flightsql's doc.go says what the formats and the fill are to a user; this
// package's errors are that source's, and say "flightsql:".
//
// It imports pkg/frame (Grafana's metadata contract), pkg/source (the sink,
// limits and error kinds), arrow-go and the SDK's data package; never
// package flightsql (which imports it), never gRPC or arrow-go's flight
// packages (it knows batches, not the wire), never the SDK's backend
// package, never pkg/plugin (tests/layout checks it).
//
// # Splitting
//
// Batches are split as they arrive, column-wise: each row's label values are
// hashed where they lie (no strings built), and its series found in an
// open-addressing table and confirmed by comparing the values; a result with
// one text label column first tries two guesses (lookupText). A batch's
// values are copied out and the batch is not kept (the caller may then reuse
// its memory: flightsql's bodies.go); every 64Ki rows the pending rows are
// grouped by series (a counting sort, or, when they cycle through every
// series, every period-th row) and each column is gathered in that order
// into one segment per flush, exactly as long as its rows; a flush whose
// rows cycle through every series in time order keeps its distinct times
// once (flushSharedTimes). The segments and the pending rows are the
// builder's own memory, taken from a pool kept across the source's queries
// (Memory) and given back when the builder is released (Builder.Release). At
// the end each series' runs are copied together once, into memory from the
// source's pool of arrays (Memory; when it goes back: DirtyPool.Allocate); a
// series whose times are the previous series' shares them, and a series of
// one run (its arrays slices of segments other series share) is handed over
// to be copied. The fill is the builder's post step (fillStep), which sees
// each series sorted.
package series
