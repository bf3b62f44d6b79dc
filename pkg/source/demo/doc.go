// Package demo is Quiver's embedded data source: a deterministic generator
// that needs no configuration, so that a fresh install answers queries at
// once and the codecs can be compared on realistic frames.
//
// Query JSON: {"scenario": "random_walk" | "logs" | "table",
// "seriesCount": N, "seed": S}. The same query over the same time range
// always returns the same frames.
//
// Every limit (maxSeries, maxPoints, and the body bytes maxPoints allows) is
// checked before anything is allocated, with arithmetic that saturates
// rather than wraps; then the query's memory is reserved at once
// (source.Reserve), so it waits for the plugin's memory budget, or fails,
// before it produces.
//
// demo imports packages source and frame and the SDK's data package.
package demo
