// Package plugin is Quiver's Grafana wiring: the data-source instance
// factory (settings parsed and validated once per instance), health checks,
// resource calls (among them the codec advisor, advisor.go, which measures
// every codec setting on an administrator's query), and Quiver's own
// implementation of the plugin protocol's
// Data service, which encodes every frame with package frame and pooled
// codecs instead of the SDK's MarshalArrow. Queries run through the same
// handler middlewares as the SDK's own path (middleware.go).
//
// Every frame a query holds (waiting to be encoded, or encoded and waiting
// to be sent) counts against one process-wide memory budget (budget.go);
// queries wait for it, in order, before they produce.
//
// A source may hand a frame over in parts (source.PartSink, parts.go): each
// part is encoded on the shared encode workers as it arrives, in order, into
// one Arrow IPC file of several record batches, emitted whole at the frame's
// index when the source closes it (the JSON format declines, and gets the
// frame whole).
//
// The Data service's responses go to gRPC without a copy: the service is
// registered with a descriptor of its own (dataservice.go) whose handlers
// return Quiver's reply and chunk types, and a "proto" codec that Serve
// registers (wire.go) writes those with each frame's own bytes (or pieces)
// as buffers of the message, and hands every other message to gRPC's codec.
//
// It is the only package besides main that imports the SDK's backend
// package. Errors from sources are classified here, once, at the edge:
// status code and error source (plugin or downstream) per query.
package plugin
