// This file is longer than the others because it is one comparison: the
// records of every type and codec, described in Go, against what arrow-go
// and apache-arrow JS read back; its helpers serve that test only.

package arrowipc_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/codec"
)

// fileDesc is what tests/arrowjs/read.mjs prints for one Arrow IPC file; the
// test renders the same description in Go (see describe) and compares.
type fileDesc struct {
	Batches   int               `json:"batches"`
	BatchRows []int64           `json:"batchRows"`
	Metadata  map[string]string `json:"metadata"`
	Fields    []fieldDesc       `json:"fields"`
}

type fieldDesc struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Nullable bool              `json:"nullable"`
	Metadata map[string]string `json:"metadata"`
	Values   []any             `json:"values"` // string, bool or nil
}

type jsOutput struct {
	Files   map[string]fileDesc `json:"files"`
	Decoded map[string]struct {
		LZ4  int `json:"lz4"`
		Zstd int `json:"zstd"`
	} `json:"decoded"`
}

// TestReaders encodes records of every supported type with every codec and
// checks that arrow-go's IPC reader and apache-arrow JS both read back
// exactly the records encoded. The arrow-go half runs everywhere; the JS
// half needs node and tests/arrowjs/node_modules (see jsReader).
func TestReaders(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)

	cases := jsCases(t, mem)
	defer func() {
		for _, c := range cases {
			for _, r := range c.recs {
				r.Release()
			}
		}
	}()

	type setting struct {
		c codec.Codec
		p codec.Preference // for codec auto
	}
	codecs := []setting{
		{c: codec.MustNew(codec.None, 0)},
		{c: codec.MustNew(codec.LZ4, 0)},
		{c: codec.MustNew(codec.LZ4, 9)},
		{c: codec.MustNew(codec.Zstd, 1)},
		{c: codec.MustNew(codec.Zstd, 3)},
		{c: codec.MustNew(codec.Zstd, 7)},
		{c: codec.MustNew(codec.Zstd, 19)},
	}
	for _, p := range codec.Preferences {
		codecs = append(codecs, setting{c: codec.MustNew(codec.Auto, 0), p: p})
	}
	type written struct {
		name, caseName string
		codec          codec.Codec
		minSavings     float64
		size           int
	}
	dir := t.TempDir()
	var files []written
	want := map[string]fileDesc{}   // from the records encoded
	goRead := map[string]fileDesc{} // from arrow-go's reader over the bytes
	noneSize := map[string]int{}    // case/minSavings → size with codec none
	for _, st := range codecs {
		c := st.c
		for _, ms := range []float64{0, 0.1} {
			e, err := arrowipc.NewEncoder(arrowipc.Options{Codec: c, MinSavings: ms, Preference: st.p})
			if err != nil {
				t.Fatal(err)
			}
			fileEnc, err := arrowipc.NewEncoder(arrowipc.Options{Codec: c, MinSavings: ms, Preference: st.p})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range cases {
				out, err := e.AppendRecords(nil, tc.schema, tc.recs...)
				if err != nil {
					t.Fatalf("%s %s: %v", tc.name, c, err)
				}
				// A File (written batch by batch, joined when finished) gives
				// the same bytes, so every reader below reads it too. (A
				// File has at least one batch.)
				if len(tc.recs) > 0 {
					asFile, err := fileEnc.AppendRecordsAsFile(nil, tc.schema, tc.recs...)
					if err != nil {
						t.Fatalf("%s %s as a File: %v", tc.name, c, err)
					}
					if !bytes.Equal(asFile, out) {
						t.Errorf("%s %s: through a File, %d bytes differ from the %d of AppendRecords", tc.name, c, len(asFile), len(out))
					}
				}
				name := fmt.Sprintf("%s_%s%s_ms%s.arrow", tc.name, strings.ReplaceAll(c.String(), "/", ""), st.p.Name,
					strconv.FormatFloat(ms, 'f', -1, 64))
				if err := os.WriteFile(filepath.Join(dir, name), out, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, written{name, tc.name, c, ms, len(out)})
				want[name] = describe(tc.schema, tc.recs)
				goRead[name] = readGo(t, mem, name, out)
				if c.Kind() == codec.None {
					noneSize[fmt.Sprint(tc.name, ms)] = len(out)
				}
			}
		}
	}

	for _, f := range files {
		compareDesc(t, f.name+" (arrow-go reader vs records)", want[f.name], goRead[f.name])
	}
	node, script := jsReader(t)
	cmd := exec.Command(node, script, dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s %s: %v\n%s", script, dir, err, stderr.String())
	}
	var js jsOutput
	if err := json.Unmarshal(stdout, &js); err != nil {
		t.Fatalf("reading the JS reader's output: %v", err)
	}
	if len(js.Files) != len(files) {
		t.Errorf("JS reader described %d files, %d written", len(js.Files), len(files))
	}

	for _, f := range files {
		jsDesc, ok := js.Files[f.name]
		if !ok {
			t.Errorf("%s: not described by the JS reader", f.name)
			continue
		}
		compareDesc(t, f.name+" (apache-arrow JS vs records)", want[f.name], jsDesc)

		// The codec the JS reader was asked for must be the one configured;
		// the "types" file must really hold compressed buffers.
		dec := js.Decoded[f.name]
		switch f.codec.Kind() {
		case codec.None:
			if dec.LZ4+dec.Zstd != 0 {
				t.Errorf("%s: codec none, yet the JS reader decompressed %d lz4 and %d zstd buffers", f.name, dec.LZ4, dec.Zstd)
			}
		case codec.LZ4:
			if dec.Zstd != 0 {
				t.Errorf("%s: codec lz4, yet the JS reader decompressed %d zstd buffers", f.name, dec.Zstd)
			}
		case codec.Zstd:
			if dec.LZ4 != 0 {
				t.Errorf("%s: codec zstd, yet the JS reader decompressed %d lz4 buffers", f.name, dec.LZ4)
			}
		}
		// Codec auto may send any batch uncompressed: it is checked for
		// values only.
		if f.caseName == "types" && f.codec.Kind() != codec.None && f.codec.Kind() != codec.Auto {
			if dec.LZ4+dec.Zstd == 0 {
				t.Errorf("%s: the JS reader decompressed no buffer", f.name)
			}
			if none := noneSize[fmt.Sprint(f.caseName, f.minSavings)]; f.size >= none {
				t.Errorf("%s: %d bytes, not smaller than the %d bytes of codec none", f.name, f.size, none)
			}
			t.Logf("%s: %d bytes (none: %d), JS decompressed lz4 %d, zstd %d buffers",
				f.name, f.size, noneSize[fmt.Sprint(f.caseName, f.minSavings)], dec.LZ4, dec.Zstd)
		}
	}
}

// jsReader returns the node executable and the path of read.mjs, or skips
// the test (fails it when QUIVER_REQUIRE_NODE=1) naming what is missing.
func jsReader(t *testing.T) (node, script string) {
	t.Helper()
	missing := func(msg string) {
		if os.Getenv("QUIVER_REQUIRE_NODE") == "1" {
			t.Fatal(msg + " (QUIVER_REQUIRE_NODE=1)")
		}
		t.Skip(msg)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "tests", "arrowjs")
	node, err = exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH: install Node.js 20 or newer, then run `npm ci --prefix tests/arrowjs` in the repository root")
	}
	for _, pkg := range []string{"apache-arrow", "fzstd", "lz4js"} {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", pkg, "package.json")); err != nil {
			missing("tests/arrowjs/node_modules/" + pkg + " is missing: run `npm ci --prefix tests/arrowjs` in the repository root")
		}
	}
	return node, filepath.Join(dir, "read.mjs")
}

type jsCase struct {
	name   string
	schema *arrow.Schema
	recs   []arrow.RecordBatch
}

// jsCases builds the files' contents: every supported type nullable and not,
// in full and sliced batches; an empty batch; no batch; no field.
func jsCases(t *testing.T, mem memory.Allocator) []jsCase {
	t.Helper()
	zoned := &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "Europe/Paris"}
	typs := []arrow.DataType{
		arrow.FixedWidthTypes.Boolean,
		arrow.PrimitiveTypes.Int8, arrow.PrimitiveTypes.Int16, arrow.PrimitiveTypes.Int32, arrow.PrimitiveTypes.Int64,
		arrow.PrimitiveTypes.Uint8, arrow.PrimitiveTypes.Uint16, arrow.PrimitiveTypes.Uint32, arrow.PrimitiveTypes.Uint64,
		arrow.PrimitiveTypes.Float32, arrow.PrimitiveTypes.Float64,
		arrow.BinaryTypes.String, arrow.BinaryTypes.Binary,
		&arrow.TimestampType{Unit: arrow.Nanosecond}, zoned,
	}
	var fields []arrow.Field
	for i, typ := range typs {
		for _, nullable := range []bool{false, true} {
			f := arrow.Field{Name: typ.String(), Type: typ, Nullable: nullable}
			if nullable {
				f.Name += " (nullable)"
			}
			switch i % 3 {
			case 0:
				f.Metadata = arrow.NewMetadata([]string{"labels", "tstype"}, []string{`{"host":"ä-1","job":"🚀"}`, "number"})
			case 1:
				f.Metadata = arrow.NewMetadata([]string{"config", "ключ", "empty"}, []string{`{"displayName":"Größe ✓"}`, "значение", ""})
			}
			fields = append(fields, f)
		}
	}
	md := arrow.NewMetadata([]string{"name", "refId", "meta", "empty"},
		[]string{"quiver ✓ 日本", "A", `{"executedQueryString":"SELECT 'ü'"}`, ""})
	schema := arrow.NewSchema(fields, &md)

	const rows = 1000
	full := buildRecord(mem, schema, rows)
	slices := []arrow.RecordBatch{
		full,
		full.NewSlice(3, 503),     // offset not a multiple of 8
		full.NewSlice(8, 9),       // one row: every buffer below the size worth compressing
		full.NewSlice(1, 2),       // one row, every nullable column null
		full.NewSlice(13, 13),     // no row, non-zero offset
		full.NewSlice(517, rows),  // offset 64*8+5, to the end
		full.NewSlice(600, 600+8), // offset a multiple of 8
	}
	empty := buildRecord(mem, schema, 0)

	nmd := arrow.NewMetadata([]string{"name"}, []string{"no fields"})
	noFields := arrow.NewSchema(nil, &nmd)
	return []jsCase{
		{"types", schema, slices},
		{"empty", schema, []arrow.RecordBatch{empty}},
		{"nobatch", schema, nil},
		{"nofields", noFields, []arrow.RecordBatch{
			array.NewRecordBatch(noFields, nil, 5),
			array.NewRecordBatch(noFields, nil, 0),
		}},
	}
}

var (
	float64s = []float64{
		math.NaN(), math.Float64frombits(0x7ff0000000000001), math.Float64frombits(0xfff8000000000000),
		math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0,
		math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64, 0.1,
	}
	float32s = []float32{
		float32(math.NaN()), math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00000),
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0,
		math.SmallestNonzeroFloat32, math.MaxFloat32, 0.1,
	}
	strs = []string{
		"", "a", "héllo wörld", "日本語のテキスト", "emoji 🎉🚀👩‍👩‍👧", "e\u0301 combining", "Ω≈ç√∫",
		"tab\tnewline\n\"quote\" \\", "nul\x00byte", "a somewhat longer ascii string that repeats",
	}
	bins = [][]byte{{}, {0}, {0xff, 0xfe, 0x00}, []byte("binary ✓"), bytes.Repeat([]byte{0xaa, 0x55}, 20)}
)

// buildRecord builds n rows of schema's fields. Nullable fields are null on
// a pattern with both scattered nulls and runs of them; integers reach their
// type's extremes; floats carry NaNs, infinities and -0; the float64 column
// is a random walk that compression cannot shrink.
func buildRecord(mem memory.Allocator, schema *arrow.Schema, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	rng := rand.New(rand.NewPCG(1, 2))
	walk := make([]float64, n)
	for i := range walk {
		if i < len(float64s) {
			walk[i] = float64s[i]
		} else {
			walk[i] = walk[i-1] + rng.NormFloat64()
		}
	}
	for j, f := range schema.Fields() {
		fb := b.Field(j)
		for i := range n {
			if f.Nullable && (i%5 == 1 || (i/64)%4 == 3) {
				fb.AppendNull()
				continue
			}
			switch fb := fb.(type) {
			case *array.BooleanBuilder:
				fb.Append(i%3 == 0)
			case *array.Int8Builder:
				fb.Append(int8(intValue(i, 8)))
			case *array.Int16Builder:
				fb.Append(int16(intValue(i, 16)))
			case *array.Int32Builder:
				fb.Append(int32(intValue(i, 32)))
			case *array.Int64Builder:
				fb.Append(intValue(i, 64))
			case *array.Uint8Builder:
				fb.Append(uint8(uintValue(i, 8)))
			case *array.Uint16Builder:
				fb.Append(uint16(uintValue(i, 16)))
			case *array.Uint32Builder:
				fb.Append(uint32(uintValue(i, 32)))
			case *array.Uint64Builder:
				fb.Append(uintValue(i, 64))
			case *array.Float32Builder:
				if i < len(float32s) {
					fb.Append(float32s[i])
				} else {
					fb.Append(float32(i%10) * 0.25)
				}
			case *array.Float64Builder:
				fb.Append(walk[i])
			case *array.StringBuilder:
				fb.Append(strs[i%len(strs)])
			case *array.BinaryBuilder:
				fb.Append(bins[i%len(bins)])
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(timestampValue(i)))
			default:
				panic(fmt.Sprintf("no values for %T", fb))
			}
		}
	}
	return b.NewRecordBatch()
}

// intValue is row i of a signed column of bits bits: the extremes, a value
// beyond float64's exact integers, then a short repeating cycle.
func intValue(i, bits int) int64 {
	switch {
	case i == 0:
		return -1 << (bits - 1)
	case i == 1:
		return 1<<(bits-1) - 1
	case i == 2 && bits == 64:
		return 1<<53 + 1
	}
	return int64(i%50 - 25)
}

// timestampValue is row i of a timestamp column: the extremes, one
// nanosecond before the epoch, then one value a second.
func timestampValue(i int) int64 {
	switch i {
	case 0:
		return math.MinInt64
	case 1:
		return math.MaxInt64
	case 2:
		return -1
	}
	return 1_700_000_000_000_000_000 + int64(i)*1_000_000_000
}

func uintValue(i, bits int) uint64 {
	switch {
	case i == 0:
		return 0
	case i == 1:
		return math.MaxUint64 >> (64 - bits)
	case i == 2 && bits == 64:
		return 1<<63 + 1
	}
	return uint64(i % 50)
}

// readGo describes the file in out as arrow-go's IPC file reader reads it.
func readGo(t *testing.T, mem memory.Allocator, name string, out []byte) fileDesc {
	t.Helper()
	r, err := ipc.NewFileReader(bytes.NewReader(out), ipc.WithAllocator(mem))
	if err != nil {
		t.Fatalf("%s: arrow-go reader: %v", name, err)
	}
	defer r.Close()
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for i := range r.NumRecords() {
		rec, err := r.RecordBatchAt(i)
		if err != nil {
			t.Fatalf("%s: arrow-go reader: batch %d: %v", name, i, err)
		}
		recs = append(recs, rec)
	}
	return describe(r.Schema(), recs)
}

// describe renders schema and recs as read.mjs does.
func describe(schema *arrow.Schema, recs []arrow.RecordBatch) fileDesc {
	d := fileDesc{
		Batches:   len(recs),
		BatchRows: []int64{},
		Metadata:  metadataMap(schema.Metadata()),
		Fields:    []fieldDesc{},
	}
	for _, f := range schema.Fields() {
		d.Fields = append(d.Fields, fieldDesc{
			Name: f.Name, Type: canonicalType(f.Type), Nullable: f.Nullable,
			Metadata: metadataMap(f.Metadata), Values: []any{},
		})
	}
	for _, rec := range recs {
		d.BatchRows = append(d.BatchRows, rec.NumRows())
		for j := range d.Fields {
			col := rec.Column(j)
			for i := range col.Len() {
				d.Fields[j].Values = append(d.Fields[j].Values, renderValue(col, i))
			}
		}
	}
	return d
}

func metadataMap(md arrow.Metadata) map[string]string {
	m := make(map[string]string, md.Len())
	for i, k := range md.Keys() {
		m[k] = md.Values()[i]
	}
	return m
}

// canonicalType is the type string read.mjs prints.
func canonicalType(t arrow.DataType) string {
	switch t := t.(type) {
	case *arrow.BooleanType:
		return "bool"
	case *arrow.StringType:
		return "utf8"
	case *arrow.BinaryType:
		return "binary"
	case *arrow.TimestampType:
		if t.TimeZone != "" {
			return fmt.Sprintf("timestamp[%s, tz=%s]", t.Unit, t.TimeZone)
		}
		return fmt.Sprintf("timestamp[%s]", t.Unit)
	}
	return t.String() // int8 … uint64, float32, float64
}

// renderValue is row i of arr as read.mjs renders it.
func renderValue(arr arrow.Array, i int) any {
	if arr.IsNull(i) {
		return nil
	}
	switch a := arr.(type) {
	case *array.Boolean:
		return a.Value(i)
	case *array.Int8:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int16:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int32:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	case *array.Int64:
		return strconv.FormatInt(a.Value(i), 10)
	case *array.Uint8:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint16:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint32:
		return strconv.FormatUint(uint64(a.Value(i)), 10)
	case *array.Uint64:
		return strconv.FormatUint(a.Value(i), 10)
	case *array.Float32:
		return fmt.Sprintf("%08x", math.Float32bits(a.Value(i)))
	case *array.Float64:
		return fmt.Sprintf("%016x", math.Float64bits(a.Value(i)))
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return base64.StdEncoding.EncodeToString(a.Value(i))
	case *array.Timestamp:
		return strconv.FormatInt(int64(a.Value(i)), 10)
	}
	panic(fmt.Sprintf("no rendering for %s", arr.DataType()))
}

// compareDesc reports every difference between want and got, values row by
// row (at most a few per field).
func compareDesc(t *testing.T, label string, want, got fileDesc) {
	t.Helper()
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if got.Batches != want.Batches {
		add("batches: got %d, want %d", got.Batches, want.Batches)
	}
	if !slices.Equal(got.BatchRows, want.BatchRows) {
		add("batch rows: got %v, want %v", got.BatchRows, want.BatchRows)
	}
	if !maps.Equal(got.Metadata, want.Metadata) {
		add("schema metadata: got %q, want %q", got.Metadata, want.Metadata)
	}
	if len(got.Fields) != len(want.Fields) {
		add("%d fields, want %d", len(got.Fields), len(want.Fields))
	}
	for j := range min(len(got.Fields), len(want.Fields)) {
		g, w := got.Fields[j], want.Fields[j]
		if g.Name != w.Name || g.Type != w.Type || g.Nullable != w.Nullable {
			add("field %d: got %q %s nullable=%v, want %q %s nullable=%v", j, g.Name, g.Type, g.Nullable, w.Name, w.Type, w.Nullable)
		}
		if !maps.Equal(g.Metadata, w.Metadata) {
			add("field %q metadata: got %q, want %q", w.Name, g.Metadata, w.Metadata)
		}
		if len(g.Values) != len(w.Values) {
			add("field %q: %d values, want %d", w.Name, len(g.Values), len(w.Values))
		}
		bad := 0
		for i := range min(len(g.Values), len(w.Values)) {
			if !reflect.DeepEqual(g.Values[i], w.Values[i]) {
				if bad++; bad <= 3 {
					add("field %q row %d (counting across batches): got %#v, want %#v", w.Name, i, g.Values[i], w.Values[i])
				}
			}
		}
		if bad > 3 {
			add("field %q: %d rows differ in all", w.Name, bad)
		}
	}
	if len(errs) > 0 {
		t.Errorf("%s:\n%v", label, errors.Join(errs...))
	}
}
