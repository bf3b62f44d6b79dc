package flightsql

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/pkg/source"
)

// oneEndpoint answers every statement with one endpoint, whose DoGet a
// test writes (serverOpts.doGet).
type oneEndpoint struct{ flightsql.BaseServer }

func (oneEndpoint) GetFlightInfoStatement(_ context.Context, _ flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return &flight.FlightInfo{FlightDescriptor: desc, Endpoint: []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: []byte("t")}}}}, nil
}

// startRaw serves a statement whose one endpoint's DoGet is send.
func startRaw(t testing.TB, send func(stream flight.FlightService_DoGetServer) error) string {
	t.Helper()
	return startServer(t, &oneEndpoint{}, serverOpts{doGet: send})
}

// sending returns a DoGet that sends msgs.
func sending(msgs ...*flight.FlightData) func(flight.FlightService_DoGetServer) error {
	return func(stream flight.FlightService_DoGetServer) error {
		for _, m := range msgs {
			if err := stream.Send(m); err != nil {
				return err
			}
		}
		return nil
	}
}

// capture keeps what a flight.RecordWriter sends.
type capture struct{ msgs []*flight.FlightData }

func (c *capture) Send(fd *flight.FlightData) error {
	c.msgs = append(c.msgs, proto.Clone(fd).(*flight.FlightData))
	return nil
}

// messagesOf is the FlightData of schema and recs, written with opts.
func messagesOf(t testing.TB, schema *arrow.Schema, recs []arrow.RecordBatch, opts ...ipc.Option) []*flight.FlightData {
	t.Helper()
	c := &capture{}
	w := flight.NewRecordWriter(c, append([]ipc.Option{ipc.WithSchema(schema)}, opts...)...)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return c.msgs
}

// largestAlloc is an allocator that records the largest allocation asked
// of it and refuses one above 1 GiB, where the Go allocator would kill the
// test process.
type largestAlloc struct {
	memory.Allocator
	largest atomic.Int64
}

func (a *largestAlloc) note(n int) {
	for l := a.largest.Load(); int64(n) > l && !a.largest.CompareAndSwap(l, int64(n)); l = a.largest.Load() {
	}
	if n > 1<<30 {
		panic("largestAlloc: more than 1 GiB asked for")
	}
}
func (a *largestAlloc) Allocate(n int) []byte { a.note(n); return a.Allocator.Allocate(n) }
func (a *largestAlloc) Reallocate(n int, b []byte) []byte {
	a.note(n)
	return a.Allocator.Reallocate(n, b)
}

// The uncompressed length a compressed buffer states is the server's word:
// a 200-byte batch stating a terabyte is refused before it is allocated
// (the Go allocator would kill the process), naming the bound.
func TestGuardRefusesAStatedLengthPastAMessage(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	for i := range 1000 {
		b.Append(int64(i % 3))
	}
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1000)
	col.Release()
	defer rec.Release()
	msgs := messagesOf(t, rec.Schema(), []arrow.RecordBatch{rec}, ipc.WithZstd())
	var stated, huge [8]byte
	binary.LittleEndian.PutUint64(stated[:], 8000)
	binary.LittleEndian.PutUint64(huge[:], 1<<40)
	i := bytes.Index(msgs[1].DataBody, stated[:])
	if i < 0 {
		t.Fatal("no stated length of 8000 bytes in the batch's body")
	}
	copy(msgs[1].DataBody[i:], huge[:])
	cfg := baseConfig(startRaw(t, sending(msgs...)))
	cfg.ByteLimit = 1 << 20
	mem := &largestAlloc{Allocator: memory.NewGoAllocator()}
	s, err := New(cfg, WithAllocator(mem))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = runQuery(t, s, "SELECT v", FormatTable, source.Limits{})
	if err == nil || !strings.Contains(err.Error(), "a batch of the server's decompresses to more than 65 MiB") {
		t.Errorf("error %v, want one naming what a message may carry", err)
	}
	if got := mem.largest.Load(); got > int64(maxMessage(cfg.ByteLimit)) {
		t.Errorf("asked to allocate %d bytes at once", got)
	}
}

// Delta dictionaries, which arrow-go's reader keeps and no record batch
// need follow, add up to at most what one message may carry.
func TestGuardBoundsTheDictionaries(t *testing.T) {
	dictBatch := func(values ...string) arrow.RecordBatch {
		dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
		vb := array.NewStringBuilder(memory.DefaultAllocator)
		vb.AppendValues(values, nil)
		dict := vb.NewArray()
		vb.Release()
		ib := array.NewInt32Builder(memory.DefaultAllocator)
		ib.Append(0)
		idx := ib.NewArray()
		ib.Release()
		col := array.NewDictionaryArray(dt, idx, dict)
		idx.Release()
		dict.Release()
		defer col.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "s", Type: dt}}, nil), []arrow.Array{col}, 1)
	}
	r1, r2 := dictBatch("a"), dictBatch("a", strings.Repeat("x", 1<<20))
	defer r1.Release()
	defer r2.Release()
	msgs := messagesOf(t, r1.Schema(), []arrow.RecordBatch{r1, r2}, ipc.WithDictionaryDeltas(true))
	if len(msgs) != 5 { // schema, dictionary, batch, delta, batch
		t.Fatalf("%d messages", len(msgs))
	}
	cfg := baseConfig(startRaw(t, func(stream flight.FlightService_DoGetServer) error {
		if err := sending(msgs[:3]...)(stream); err != nil {
			return err
		}
		for range 100 { // 100 MiB of deltas, and no batch after them
			if err := stream.Send(msgs[3]); err != nil {
				return err
			}
		}
		return nil
	}))
	cfg.ByteLimit = 1 << 20
	_, err := runQuery(t, newTestSource(t, cfg), "SELECT s", FormatTable, source.Limits{})
	if err == nil || !strings.Contains(err.Error(), "the server's dictionaries add up to more than 65 MiB") {
		t.Errorf("error %v, want one naming the dictionaries' bound", err)
	}
}

// A schema nested deeper than arrow-go reads a batch is refused before
// arrow-go parses it: its parser recurses once a level, and a deep enough
// schema overflows the stack, which kills the process.
func TestGuardRefusesADeepSchema(t *testing.T) {
	var dt arrow.DataType = arrow.Null
	for range maxSchemaDepth + 1 {
		dt = arrow.ListOf(dt)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: dt, Nullable: true}}, nil)
	msg := &flight.FlightData{DataHeader: flight.SerializeSchema(schema, memory.DefaultAllocator)[8:]}
	_, err := runQuery(t, newTestSource(t, baseConfig(startRaw(t, sending(msg)))), "SELECT x", FormatTable, source.Limits{})
	if err == nil || !strings.Contains(err.Error(), "the server's schema nests more than 64 levels deep") {
		t.Errorf("error %v, want one naming the depth", err)
	}
}

// A batch's length is the server's word, and a null column costs no bytes
// at any length: a batch of MaxInt64 rows after one row is truncated to
// rowLimit, where the sum of the two had wrapped past it.
func TestRowCountsDoNotOverflow(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "n", Type: arrow.Null, Nullable: true}}, nil)
	r1 := array.NewRecordBatch(schema, []arrow.Array{array.NewNull(1)}, 1)
	r2 := array.NewRecordBatch(schema, []arrow.Array{array.NewNull(math.MaxInt64)}, math.MaxInt64)
	cfg := baseConfig(startRaw(t, sending(messagesOf(t, schema, []arrow.RecordBatch{r1, r2})...)))
	cfg.RowLimit = 1000
	sink, err := runQuery(t, newTestSource(t, cfg), "SELECT n", FormatTable, source.Limits{})
	if err != nil || len(sink.frames) != 1 || sink.frames[0].Rows() != 1000 || sink.frames[0].Meta == nil ||
		!strings.Contains(fmt.Sprint(sink.frames[0].Meta.Notices), "truncated to 1000 rows") {
		t.Fatalf("%v, want 1000 rows and the rowLimit notice", err)
	}
	if got := mulDiv(math.MaxInt64, math.MaxInt64, math.MaxInt64); got != math.MaxInt64 {
		t.Errorf("mulDiv(max, max, max) = %d", got)
	}
	if got := mulDiv(math.MaxInt64, 3, 4); got != math.MaxInt64/4*3+2 {
		t.Errorf("mulDiv(max, 3, 4) = %d", got)
	}
}
