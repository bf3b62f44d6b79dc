// Package decoders_test, in its own module, decodes the frames the main
// module writes (tests/decoders, TestWriteFrames -write DIR) with the SDK
// and arrow-go of Grafana 12.x: grafana-plugin-sdk-go v0.289.0 and arrow-go
// v18.5.1, what a Grafana go.mod of February 2026 requires. That arrow-go
// builds a new zstd decoder for every compressed record batch; the main
// module's (v18.9.0) pools them. Run from this directory:
//
//	go test -run '^$' -bench GrafanaDecode -count 6 -frames DIR
package decoders_test
