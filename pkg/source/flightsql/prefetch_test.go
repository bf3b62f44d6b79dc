package flightsql

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/quiverdata/quiver/pkg/source"
)

// panickyReader panics in Next, as arrow-go's reader may on a stream it
// cannot decode.
type panickyReader struct{}

func (panickyReader) Next() bool                     { panic("index out of range [7] with length 3") }
func (panickyReader) RecordBatch() arrow.RecordBatch { return nil }
func (panickyReader) Err() error                     { return nil }

func TestPrefetchPanicIsTheStreamsError(t *testing.T) {
	cancelled := false
	p := prefetch(panickyReader{}, func() { cancelled = true })
	for rec := range p.ch {
		rec.Release()
		t.Error("a batch from a reader that panicked")
	}
	if p.err == nil || !strings.Contains(p.err.Error(), "reading the server's stream: index out of range") {
		t.Fatalf("err = %v, want the panic as the stream's error", p.err)
	}
	if k := source.KindOf(p.err); k != source.KindUpstream {
		t.Errorf("kind %v, want upstream", k)
	}
	p.stop()
	if !cancelled {
		t.Error("stop did not cancel the call")
	}
}
