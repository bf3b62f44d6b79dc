// Package source owns the contract between Quiver's data sources and the
// plugin: a small required interface (Source) plus optional capabilities,
// discovered by type assertion: a source's (HealthReporter,
// ResourceHandler, io.Closer), once, when the data-source instance is built;
// a sink's (Reserver, PartSink, RecordLender) and a frame writer's
// (PartLender), by the source that uses them.
//
// A source turns one query into frames and hands each frame to a Sink as soon
// as it is complete, or, when the Sink is a PartSink, a frame in parts as its
// rows arrive; it never encodes them. Errors that are the user's fault
// are wrapped with BadQuery, failures of the system behind the source with
// Upstream; the plugin classifies them once, at the gRPC edge.
//
// The identity Grafana forwards for the user of a request travels in the
// request's context (WithForwarded, ForwardedFrom); a source sends it only
// when its settings say so, and it never prints.
//
// source imports the SDK's data package and arrow-go only; never the SDK's
// backend package, never pkg/plugin.
package source
