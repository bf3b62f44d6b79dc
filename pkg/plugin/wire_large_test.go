//go:build !race

// Not under -race: checkptr (on with -race) refuses the slices below, which
// claim more memory than they have.

package plugin

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
)

// A response past protobuf's 2 GiB is refused with its size, before any of
// its bytes is read.
func TestWireTooLarge(t *testing.T) {
	// Slices that claim 1 GiB over 16 bytes: the codec must fail on sizes
	// alone, reading any of them would crash the test.
	var small [16]byte
	huge := unsafe.Slice(&small[0], 1<<30)
	m := &pluginv2.QueryDataResponse{Responses: map[string]*pluginv2.DataResponse{
		"A": {Frames: [][]byte{huge, huge}}, // just over 2 GiB with the tags
	}}
	_, _, err := marshalQueryData(m, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "more than a protobuf message may hold") {
		t.Fatalf("error %v", err)
	}
	// The same frames in two refIds.
	m.Responses = map[string]*pluginv2.DataResponse{"A": {Frames: [][]byte{huge}}, "B": {Frames: [][]byte{huge}}}
	if _, _, err := marshalQueryData(m, nil, nil); err == nil {
		t.Fatal("no error for two refIds of 1 GiB")
	}
	// One frame of 1 GiB is within it (only sizes are checked here).
	m.Responses = map[string]*pluginv2.DataResponse{"A": {Frames: [][]byte{huge[:1<<30-16]}}}
	if sz := dataResponseSize(m.Responses["A"], nil); sz > maxWireMessage {
		t.Fatalf("1 GiB frame sized %d", sz)
	}
}
