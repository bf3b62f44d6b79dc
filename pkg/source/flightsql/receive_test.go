package flightsql

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	flightgen "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/quiverdata/quiver/pkg/source"
	"github.com/quiverdata/quiver/pkg/source/flightsql/series"
)

// split cuts b into pieces at the given offsets (sorted, within b), as
// the transport hands a message over: one buffer per data frame.
func split(b []byte, cuts ...int) mem.BufferSlice {
	var out mem.BufferSlice
	prev := 0
	for _, c := range cuts {
		out = append(out, mem.SliceBuffer(b[prev:c]))
		prev = c
	}
	return append(out, mem.SliceBuffer(b[prev:]))
}

// randomCuts returns up to k sorted cut points in [0, n], repeats allowed
// (empty pieces).
func randomCuts(rng *rand.Rand, n, k int) []int {
	cuts := make([]int, rng.IntN(k+1))
	for i := range cuts {
		cuts[i] = rng.IntN(n + 1)
	}
	for i := 1; i < len(cuts); i++ {
		for j := i; j > 0 && cuts[j] < cuts[j-1]; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	return cuts
}

func randomBytes(rng *rand.Rand) []byte {
	switch rng.IntN(5) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	sizes := []int{1, 127, 128, 300, 16383, 16384, 70000}
	b := make([]byte, sizes[rng.IntN(len(sizes))]+rng.IntN(3))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// sameBytes is bytes.Equal that also tells nil from empty: protobuf leaves
// an absent or empty bytes field nil, and the decoder must too.
func sameBytes(a, b []byte) bool {
	return bytes.Equal(a, b) && (a == nil) == (b == nil)
}

func sameFlightData(a, b *flightgen.FlightData) bool {
	return proto.Equal(a, b) && sameBytes(a.DataHeader, b.DataHeader) &&
		sameBytes(a.AppMetadata, b.AppMetadata) && sameBytes(a.DataBody, b.DataBody)
}

// TestDecodeFlightDataMatchesProto decodes random messages, split at random
// places (inside tags and lengths too), and some of them concatenated (a
// field repeated: the last wins), and compares every field with what
// proto.Unmarshal makes of the same bytes.
func TestDecodeFlightDataMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	for i := range 600 {
		msg := &flightgen.FlightData{DataHeader: randomBytes(rng), AppMetadata: randomBytes(rng), DataBody: randomBytes(rng)}
		wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		if i%4 == 3 {
			again, err := proto.Marshal(&flightgen.FlightData{DataHeader: randomBytes(rng), DataBody: randomBytes(rng)})
			if err != nil {
				t.Fatal(err)
			}
			wire = append(wire, again...)
		}
		want := new(flightgen.FlightData)
		if err := proto.Unmarshal(wire, want); err != nil {
			t.Fatal(err)
		}
		got := &flightgen.FlightData{AppMetadata: []byte("left over from before")}
		if !decodeFlightData(split(wire, randomCuts(rng, len(wire), 8)...), got, nil) {
			t.Fatalf("message %d (%d bytes): declined", i, len(wire))
		}
		if !sameFlightData(got, want) {
			t.Fatalf("message %d: got header %d, meta %d, body %d bytes; want %d, %d, %d",
				i, len(got.DataHeader), len(got.AppMetadata), len(got.DataBody),
				len(want.DataHeader), len(want.AppMetadata), len(want.DataBody))
		}
		// The fields are copies: the buffers they came from go back to the
		// pool once Unmarshal returns.
		if len(got.DataBody) > 0 && len(wire) > 0 {
			wire[len(wire)-1] ^= 0xff
			if got.DataBody[len(got.DataBody)-1] != want.DataBody[len(want.DataBody)-1] {
				t.Fatalf("message %d: the body aliases the received buffer", i)
			}
		}
	}
}

// TestDecodeFlightDataEdgeCases: hand-encoded messages the random ones do
// not produce, taken and decoded as protobuf decodes them.
func TestDecodeFlightDataEdgeCases(t *testing.T) {
	field := func(b []byte, num protowire.Number, v string) []byte {
		return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), []byte(v))
	}
	cases := map[string][]byte{
		"header then an empty header": field(field(nil, 2, "abc"), 2, ""),
		"an empty header then one":    field(field(nil, 2, ""), 2, "abc"),
		"app_metadata twice":          field(field(field(nil, 3, "m1"), 1000, "body"), 3, "m2"),
		"data_body twice":             field(field(nil, 1000, "first"), 1000, "second"),
		"every field empty":           field(field(field(nil, 2, ""), 3, ""), 1000, ""),
		"fields out of order":         field(field(field(nil, 1000, "b"), 3, "m"), 2, "h"),
		"length not minimal":          append(protowire.AppendTag(nil, 2, protowire.BytesType), 0x81, 0x00, 'x'),
		"tag not minimal":             {0x92, 0x00, 0x01, 'x'},
		"empty message":               {},
	}
	for name, wire := range cases {
		want := new(flightgen.FlightData)
		if err := proto.Unmarshal(wire, want); err != nil {
			t.Fatalf("%s: protobuf refuses it: %v", name, err)
		}
		for _, cuts := range [][]int{nil, {1}, {len(wire) / 2}, {len(wire) - 1}} {
			if len(wire) == 0 {
				cuts = nil
			}
			got := &flightgen.FlightData{DataHeader: []byte("left over")}
			if !decodeFlightData(split(wire, cuts...), got, nil) {
				t.Fatalf("%s, cuts %v: declined", name, cuts)
			}
			if !sameFlightData(got, want) {
				t.Fatalf("%s, cuts %v: got %q %q %q, protobuf %q %q %q", name, cuts,
					got.DataHeader, got.AppMetadata, got.DataBody, want.DataHeader, want.AppMetadata, want.DataBody)
			}
		}
	}
}

// TestDecodeFlightDataDeclines: every message the decoder does not take
// leaves the message untouched and reaches the "proto" codec, whose result
// (message or error) receiveCodec then returns.
func TestDecodeFlightDataDeclines(t *testing.T) {
	withDescriptor, err := proto.Marshal(&flightgen.FlightData{
		FlightDescriptor: &flightgen.FlightDescriptor{Type: flightgen.FlightDescriptor_CMD, Cmd: []byte("SELECT 1")},
		DataBody:         []byte{1, 2, 3},
	})
	if err != nil {
		t.Fatal(err)
	}
	body := protowire.AppendBytes(protowire.AppendTag(nil, 1000, protowire.BytesType), []byte("body"))
	cases := map[string][]byte{
		"flight_descriptor":   withDescriptor,
		"unknown field":       protowire.AppendVarint(protowire.AppendTag(bytes.Clone(body), 5, protowire.VarintType), 7),
		"unknown bytes field": protowire.AppendBytes(protowire.AppendTag(bytes.Clone(body), 4, protowire.BytesType), []byte("x")),
		"wrong wire type":     protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.VarintType), 1),
		"field number 0":      protowire.AppendBytes(protowire.AppendTag(nil, 0, protowire.BytesType), []byte("x")),
		"truncated length":    body[:len(body)-1],
		"truncated tag":       protowire.AppendTag(nil, 1000, protowire.BytesType)[:1],
		"length past the end": append(protowire.AppendTag(nil, 2, protowire.BytesType), 0x80, 0x80, 0x04),
		"length of 11 bytes":  append(protowire.AppendTag(nil, 2, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00),
		"length tenth byte 2": append(protowire.AppendTag(nil, 2, protowire.BytesType), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
		// Tags that would read as field 2, bytes, if the varint's
		// overflow went unchecked.
		"tag tenth byte 2":     {0x92, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, 0x01, 'x'},
		"tag of 11 bytes":      {0x92, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01, 'x'},
		"app_metadata fixed64": protowire.AppendFixed64(protowire.AppendTag(nil, 3, protowire.Fixed64Type), 1),
		"data_body varint":     protowire.AppendVarint(protowire.AppendTag(nil, 1000, protowire.VarintType), 1),
		"data_body group":      protowire.AppendTag(protowire.AppendTag(nil, 1000, protowire.StartGroupType), 1000, protowire.EndGroupType),
	}
	next := encoding.GetCodecV2(grpcproto.Name)
	codec := receiveCodec{next: next}
	for name, wire := range cases {
		t.Run(name, func(t *testing.T) {
			for _, cuts := range [][]int{nil, {1}, {len(wire) / 2}} {
				m := &flightgen.FlightData{DataHeader: []byte("before")}
				if decodeFlightData(split(wire, cuts...), m, nil) {
					t.Fatalf("cuts %v: taken", cuts)
				}
				if !bytes.Equal(m.DataHeader, []byte("before")) || m.DataBody != nil {
					t.Fatalf("cuts %v: a declined message changed it: %v", cuts, m)
				}
				want, got := new(flightgen.FlightData), new(flightgen.FlightData)
				wantErr := next.Unmarshal(split(wire, cuts...), want)
				gotErr := codec.Unmarshal(split(wire, cuts...), got)
				if (wantErr == nil) != (gotErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
					t.Fatalf("cuts %v: error %v, the proto codec's %v", cuts, gotErr, wantErr)
				}
				if !proto.Equal(got, want) {
					t.Fatalf("cuts %v: %v, the proto codec's %v", cuts, got, want)
				}
			}
		})
	}
	// Other messages go to the proto codec too.
	info := &flightgen.FlightInfo{TotalRecords: 42, Endpoint: []*flightgen.FlightEndpoint{{Ticket: &flightgen.Ticket{Ticket: []byte("t")}}}}
	wire, err := proto.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	got := new(flightgen.FlightInfo)
	if err := codec.Unmarshal(split(wire, 3), got); err != nil || !proto.Equal(got, info) {
		t.Fatalf("FlightInfo: %v, %v", got, err)
	}
	out, err := codec.Marshal(info)
	if err != nil || !bytes.Equal(out.Materialize(), wire) {
		t.Fatalf("Marshal: %v", err)
	}
	if codec.Name() != "" {
		t.Fatalf("Name %q: the content subtype servers see would change", codec.Name())
	}
}

// FuzzDecodeFlightData: whatever the decoder takes, protobuf takes too and
// decodes to the same fields.
func FuzzDecodeFlightData(f *testing.F) {
	seed, _ := proto.Marshal(&flightgen.FlightData{DataHeader: []byte("h"), AppMetadata: []byte{}, DataBody: []byte("body")})
	f.Add(seed, uint16(3))
	f.Add([]byte{0xc2, 0x3e, 0x00}, uint16(1))
	f.Fuzz(func(t *testing.T, wire []byte, cut uint16) {
		c := int(cut) % (len(wire) + 1)
		got := new(flightgen.FlightData)
		if !decodeFlightData(split(wire, c), got, nil) {
			return
		}
		want := new(flightgen.FlightData)
		if err := proto.Unmarshal(wire, want); err != nil {
			t.Fatalf("taken, but protobuf refuses it: %v", err)
		}
		if !sameFlightData(got, want) {
			t.Fatalf("got %v, protobuf %v", got, want)
		}
	})
}

// framedBatch is a record batch message of a 320-byte header and a
// 256 KiB body as the transport hands it over: in 16 KiB data frames.
func framedBatch(tb testing.TB) (header, body []byte, data mem.BufferSlice) {
	header, body = make([]byte, 320), make([]byte, 256<<10)
	wire, err := proto.Marshal(&flightgen.FlightData{DataHeader: header, DataBody: body})
	if err != nil {
		tb.Fatal(err)
	}
	var cuts []int
	for c := 16 << 10; c < len(wire); c += 16 << 10 {
		cuts = append(cuts, c)
	}
	return header, body, split(wire, cuts...)
}

// TestReceiveCopiesOnce: decoding a 256 KiB record batch message that
// arrives in 16 KiB data frames allocates its header and its body once
// each, and nothing else.
func TestReceiveCopiesOnce(t *testing.T) {
	header, body, data := framedBatch(t)
	codec := receiveCodec{next: failCodec{t}} // the decoder must take it
	m := new(flightgen.FlightData)
	unmarshal := func() {
		if err := codec.Unmarshal(data, m); err != nil {
			t.Fatal(err)
		}
	}
	if n := testing.AllocsPerRun(50, unmarshal); n != 2 {
		t.Errorf("%v allocations per message, want 2 (header, body)", n)
	}
	var before, after runtime.MemStats
	const runs = 20
	runtime.ReadMemStats(&before)
	for range runs {
		unmarshal()
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > uint64(len(header)+len(body))+512 {
		t.Errorf("%d bytes allocated per message of %d", per, len(header)+len(body))
	}
	if !bytes.Equal(m.DataBody, body) || !bytes.Equal(m.DataHeader, header) {
		t.Error("decoded fields differ")
	}
}

// failCodec fails the test it is used in.
type failCodec struct{ t *testing.T }

func (c failCodec) Marshal(any) (mem.BufferSlice, error) {
	c.t.Fatal("the proto codec was used")
	return nil, nil
}

func (c failCodec) Unmarshal(mem.BufferSlice, any) error {
	c.t.Fatal("the proto codec was used")
	return nil
}

func (failCodec) Name() string { return "fail" }

func BenchmarkReceive(b *testing.B) {
	_, _, data := framedBatch(b)
	next := encoding.GetCodecV2(grpcproto.Name)
	for _, c := range []struct {
		name  string
		codec encoding.CodecV2
	}{{"anchor=proto", next}, {"codec=receive", receiveCodec{next: next}}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(data.Len()))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.codec.Unmarshal(data, new(flightgen.FlightData)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestReceiveOptionsChangeNothingServersSee: every call of the connection
// the source dials carries its codec (a client interceptor sees the
// connection's default call options), every call still reaches the server
// with gRPC's default content-type, and a query's batches arrive as they
// were sent.
func TestReceiveOptionsChangeNothingServersSee(t *testing.T) {
	srv := newMemServer()
	rows := seriesRows(40, 3000) // batches larger than one 16 KiB data frame
	srv.set("m", &dataset{schema: metricsSchema, endpoints: [][]arrow.RecordBatch{metricBatches(t, rows, 4096)}})
	var mu sync.Mutex
	calls := map[string]bool{} // method: the codec was forced on it
	codecOf := func(method string, opts []grpc.CallOption) {
		forced := false
		for _, o := range opts {
			if f, ok := o.(grpc.ForceCodecV2CallOption); ok {
				_, forced = f.CodecV2.(receiveCodec)
			}
		}
		mu.Lock()
		calls[method] = forced
		mu.Unlock()
	}
	watch := []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			codecOf(method, opts)
			return invoker(ctx, method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			codecOf(method, opts)
			return streamer(ctx, desc, cc, method, opts...)
		}),
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	s, err := New(baseConfig(startServer(t, srv, serverOpts{})), WithAllocator(mem), func(o *options) { o.dialOpts = watch })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		mem.AssertSize(t, 0)
	})
	sink, err := runQuery(t, s, "m", FormatTable, source.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	f := sink.frames[0]
	if len(sink.frames) != 1 || f.Rows() != len(rows) || len(f.Fields) != 5 {
		t.Fatalf("%d frames, %d rows, want 1 of %d", len(sink.frames), f.Rows(), len(rows))
	}
	for i, r := range rows {
		cpu, _ := f.Fields[3].ConcreteAt(i)
		reqs, _ := f.Fields[4].ConcreteAt(i)
		if cpu != r.cpu || reqs != r.reqs || f.Fields[1].At(i) != r.host {
			t.Fatalf("row %d: %v %v %v, sent %v %v %v", i, f.Fields[1].At(i), cpu, reqs, r.host, r.cpu, r.reqs)
		}
	}
	mu.Lock()
	if !calls["/arrow.flight.protocol.FlightService/DoGet"] {
		t.Errorf("DoGet without the receive codec; calls: %v", calls)
	}
	for method, forced := range calls {
		if !forced {
			t.Errorf("%s without the receive codec", method)
		}
	}
	mu.Unlock()
	mds := srv.seenHeaders()
	if len(mds) == 0 {
		t.Fatal("no calls recorded")
	}
	for _, md := range mds {
		if got := md.Get("content-type"); len(got) != 1 || got[0] != "application/grpc" {
			t.Errorf("content-type %q", got)
		}
	}
}

// A time_series query over many batches gives every body back once its
// batch is read, and the next messages are written into them: its frames
// still hold, value by value, what the server sent (a body given back
// while a batch over it is still read, or a label kept over a body, would
// show here as wrong values: the batches' labels lie at other offsets in
// each). A table query, whose lent parts keep the received memory, gives
// none back and takes none.
func TestSeriesRecycleBodies(t *testing.T) {
	const hosts, batches, rows = 20, 40, 2000
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "time", Type: &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}}, // kept as received
		{Name: "host", Type: arrow.BinaryTypes.String},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64},
	}, nil)
	var recs []arrow.RecordBatch
	for b := range batches {
		recs = append(recs, batch(schema, func(rb *array.RecordBuilder) {
			for r := range rows {
				// Every host at every time, in an order that turns from
				// batch to batch: the same bodies' sizes, other labels
				// at each offset.
				h, p := (r+b)%hosts, (b*rows+r)/hosts
				rb.Field(0).(*array.TimestampBuilder).Append(arrow.Timestamp(int64(p) * 1e9))
				rb.Field(1).(*array.StringBuilder).Append(hostName(h))
				rb.Field(2).(*array.Float64Builder).Append(float64(p*hosts+h) + 0.25)
			}
		}))
	}
	srv := newMemServer()
	srv.set("t", &dataset{schema: schema, endpoints: [][]arrow.RecordBatch{recs}})
	drainDoGets(srv)
	src := newTestSource(t, baseConfig(startServer(t, srv, serverOpts{})))
	query := func(format string) *frameSink {
		t.Helper()
		sink := &frameSink{t: t}
		if err := src.Query(context.Background(), source.Query{RefID: "A", JSON: []byte(`{"rawSql":"t","format":"` + format + `"}`)}, sink); err != nil {
			t.Fatal(err)
		}
		return sink
	}

	recycled, reused := src.bodies.recycled.Load(), src.bodies.reused.Load()
	sink := query(FormatTimeSeries)
	// About four bodies are in flight (read ahead, read, split), and a
	// sync.Pool keeps one in the private slot of each processor that gave
	// one back, which a reader on another processor does not see; a
	// collection meanwhile may drop more: most of the others are written
	// into memory given back (not measurable under the race detector,
	// which makes the pool drop what it is given).
	if n, r := src.bodies.recycled.Load(), src.bodies.reused.Load(); n-recycled != batches || !raceEnabled && r-reused < batches/2 {
		t.Errorf("%d of %d bodies given back, %d written into recycled memory", n-recycled, batches, r-reused)
	}
	if len(sink.frames) != hosts {
		t.Fatalf("%d frames, want %d", len(sink.frames), hosts)
	}
	const points = batches * rows / hosts
	byName := map[string]int{}
	for h := range hosts {
		byName[hostName(h)] = h
	}
	for i, f := range sink.frames {
		h, ok := byName[f.Fields[1].Labels["host"]]
		delete(byName, f.Fields[1].Labels["host"])
		if f.Rows() != points || !ok {
			t.Fatalf("frame %d: %d rows, labels %v", i, f.Rows(), f.Fields[1].Labels)
		}
		for p := range points {
			tm, v := f.Fields[0].At(p).(time.Time), f.Fields[1].At(p).(float64)
			if tm.UnixNano() != int64(p)*1e9 || v != float64(p*hosts+h)+0.25 {
				t.Fatalf("host %d point %d: %v %v, want %v %v", h, p, tm.UnixNano(), v, int64(p)*1e9, float64(p*hosts+h)+0.25)
			}
		}
	}

	recycled, reused = src.bodies.recycled.Load(), src.bodies.reused.Load()
	sink = query(FormatTable)
	if n, r := src.bodies.recycled.Load(), src.bodies.reused.Load(); n != recycled || r != reused || len(sink.frames) != 1 || sink.frames[0].Rows() != batches*rows {
		t.Errorf("table: %d bodies given back, %d written into recycled memory (want 0, 0); %d frames", n-recycled, r-reused, len(sink.frames))
	}
}

// hostName is host h's label, of a length that differs from host to host.
func hostName(h int) string { return fmt.Sprintf("host-%s%d", strings.Repeat("x", h%3), h) }

// A body of the pool's tiers is written into the pool's memory, clipped to
// the body, and that memory goes back to the pool once the body's buffer is
// released, to hold a later body; a body outside the tiers, a stream not
// recycling and a body the codec did not decode take none of it.
func TestStreamBodiesCopy(t *testing.T) {
	wire := make([]byte, 10000)
	for i := range wire {
		wire[i] = byte(i)
	}
	data := split(wire, 1000, 7000)
	// One processor's pool, no collection: what is given back is what
	// the next Take gets (see TestSeriesRecycledMemory).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	sb := streamBodies{pool: series.NewMemory().Pool(), counts: &bodyCounts{}}
	if b := sb.copy(data, 50, 9000); cap(b) != 9000 || sb.last != nil {
		t.Fatalf("not recycling: a body of capacity %d, kept %v", cap(b), sb.last != nil)
	}
	sb.recycle.Store(true)
	b := sb.copy(data, 50, 9000)
	if !bytes.Equal(b, wire[50:9050]) || cap(b) != 9000 || sb.last == nil || cap(*sb.last) != 16<<10 || unsafe.SliceData(*sb.last) != unsafe.SliceData(b) {
		t.Fatalf("recycled: %d bytes of capacity %d, in the pool's memory %v", len(b), cap(b), sb.last != nil)
	}
	mem := unsafe.SliceData(b)
	buf, recycled := sb.buffer(b)
	if !recycled || sb.last != nil {
		t.Fatal("the recycled body's buffer does not give it back")
	}
	buf.Release()
	if n := sb.counts.recycled.Load(); n != 1 {
		t.Fatalf("%d bodies given back, want 1", n)
	}
	b = sb.copy(data, 1000, 8200)
	if !bytes.Equal(b, wire[1000:9200]) || cap(b) != 8200 {
		t.Fatalf("a second body: %d bytes of capacity %d", len(b), cap(b))
	}
	if !raceEnabled && (unsafe.SliceData(b) != mem || sb.counts.reused.Load() != 1) {
		t.Errorf("the second body is not in the memory the first gave back (%d reused)", sb.counts.reused.Load())
	}
	sb.last = nil
	if b := sb.copy(data, 0, 600); sb.last != nil || !bytes.Equal(b, wire[:600]) {
		t.Error("a body of 600 bytes, under the pool's tiers, in the pool's memory")
	}
	if buf, recycled := sb.buffer(bytes.Clone(wire[:10])); recycled {
		buf.Release()
		t.Error("a body the codec did not decode (the proto codec's) is given back")
	}
}
