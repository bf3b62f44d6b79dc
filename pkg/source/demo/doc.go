// Package demo is Quiver's embedded data source: a deterministic generator
// that needs no configuration, so that a fresh install answers queries at
// once and the codecs can be compared on realistic frames.
//
// Query JSON: {"scenario": "random_walk" | "logs" | "table" | "labels" |
// "events", "seriesCount": N, "seed": S}. The same query over the same time
// range always returns the same frames. "labels" lists the distinct values of
// one label ("label": "host" | "region" | "job") of the first N series, for
// dashboard variables; "events" returns deploys and incidents on those hosts
// (time, timeEnd, text, tags), for annotations.
//
// Every limit (maxSeries, maxPoints, and the body bytes maxPoints allows) is
// checked before anything is allocated, with arithmetic that saturates
// rather than wraps; then the query's memory is reserved at once
// (source.Reserve), so it waits for the plugin's memory budget, or fails,
// before it produces.
//
// demo imports packages source and frame and the SDK's data package.
package demo
