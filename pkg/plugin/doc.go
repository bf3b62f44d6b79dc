// Package plugin is Quiver's Grafana wiring: the data-source instance
// factory (settings parsed and validated once per instance), health checks,
// resource calls (among them the codec advisor, advisor.go, which measures
// every codec setting on an administrator's query), and Quiver's own
// implementation of the plugin protocol's
// Data service, which encodes every frame with package frame and pooled
// codecs instead of the SDK's MarshalArrow. Queries run through the same
// handler middlewares as the SDK's own path (middleware.go).
//
// A query runs on package pipeline (the sink, the encode workers, the
// memory budget, frames in parts), which hands each encoded frame back
// here to be put in the query's answer (query.go).
//
// The Data service's responses go to gRPC without a copy of their frames:
// see dataservice.go (the service's own descriptor) and wire.go (the codec).
//
// It is the only package besides main that imports the SDK's backend
// package. Errors from sources are classified here, once, at the edge:
// status code and error source (plugin or downstream) per query.
package plugin
