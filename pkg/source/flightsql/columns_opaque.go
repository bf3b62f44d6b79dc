// Extension types: the canonical ones (extensionTypes, in types.go), the
// vendor types Arrow marks arrow.opaque that this package reads
// (opaqueForms), and the notice for the others.

package flightsql

import (
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/quiverdata/quiver/pkg/source"
)

// extensionOf returns what this package does with extension type t: the
// entry of a canonical type (extensionTypes), or of an opaque type
// opaqueForms reads; ok is false for the others, which are their storage.
func extensionOf(t arrow.ExtensionType) (e extensionInfo, ok bool) {
	if o, isOpaque := t.(*extensions.OpaqueType); isOpaque {
		f, known := opaqueForms[opaqueKey{o.VendorName, o.TypeName}]
		return f.extensionInfo, known && f.fits(o.Storage)
	}
	e, ok = extensionTypes[t.ExtensionName()]
	return e, ok
}

// normaliseExtension reads the extension types extensionOf knows (the
// canonical ones, registered by arrow-go's extensions package so the IPC
// reader builds them, and the opaque types of opaqueForms); other
// extensions are normalised as their storage type, an opaque one with a
// notice naming it.
func normaliseExtension(name string, dt arrow.DataType) conversion {
	t := dt.(arrow.ExtensionType)
	if e, ok := extensionOf(t); ok {
		return e.normalise(name, dt)
	}
	sc := normalise(name, t.StorageType())
	c := sc
	c.convert = func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		storage := storageOf(a)
		if sc.convert == nil {
			storage.Retain()
			return storage, 0, nil
		}
		return sc.convert(mem, storage)
	}
	if o, ok := t.(*extensions.OpaqueType); ok {
		c.notice = opaqueNotice(name, o, c.out)
	}
	return c
}

// opaqueNotice is the notice of a column of opaque type o that opaqueForms
// does not read, shown as its storage's normalisation out.
func opaqueNotice(name string, o *extensions.OpaqueType, out arrow.DataType) string {
	shown := "as text"
	if out.ID() == arrow.STRING && o.Storage.ID() != arrow.STRING {
		shown = "as base64 of their bytes"
	}
	return fmt.Sprintf("Column %s holds values of type %s from %s that Arrow does not describe: they are shown %s.", source.Quote(name), source.Quote(o.TypeName), source.Quote(o.VendorName), shown)
}

// opaqueKey names a vendor's type that Arrow marks arrow.opaque.
type opaqueKey struct{ vendor, name string }

// opaqueForm reads one vendor type from its opaque storage, as its
// extensionInfo says (opaqueNumber, opaqueText).
type opaqueForm struct {
	width int // the storage's fixed_size_binary width; 0: binary
	extensionInfo
}

func (f opaqueForm) fits(storage arrow.DataType) bool {
	if f.width == 0 { // any binary layout: DuckDB's arrow_large_buffer_size sends large_binary
		return slices.Contains([]arrow.Type{arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW}, storage.ID())
	}
	fs, ok := storage.(*arrow.FixedSizeBinaryType)
	return ok && fs.ByteWidth == f.width
}

func storageOf(a arrow.Array) arrow.Array { return a.(array.ExtensionArray).Storage() }

// base64Opaque returns the first opaque type within dt (its fields,
// dictionary values, extension storage) that extensionOf does not read and
// whose bytes the JSON of dt therefore writes as base64, nil when there is
// none.
func base64Opaque(dt arrow.DataType) *extensions.OpaqueType {
	switch t := dt.(type) {
	case *extensions.OpaqueType:
		binaryIDs := []arrow.Type{arrow.BINARY, arrow.LARGE_BINARY, arrow.BINARY_VIEW, arrow.FIXED_SIZE_BINARY}
		if _, ok := extensionOf(t); !ok && slices.Contains(binaryIDs, t.Storage.ID()) {
			return t
		}
	case arrow.ExtensionType:
		if _, ok := extensionOf(t); !ok {
			return base64Opaque(t.StorageType())
		}
	case *arrow.DictionaryType:
		return base64Opaque(t.ValueType)
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if o := base64Opaque(f.Type); o != nil {
				return o
			}
		}
	}
	return nil
}

// opaqueNumber is an exact number read by r: float64, its text and JSON
// its digits.
func opaqueNumber(r decimalReader) extensionInfo {
	digits := func(dst []byte, a arrow.Array, i int) []byte { return r.appendDigits(dst, storageOf(a), i) }
	return extensionInfo{normalise: fixed(arrow.PrimitiveTypes.Float64, func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		return exactToFloat(mem, storageOf(a), r, 0)
	}), text: digits, json: digits}
}

// opaqueText is text written by text from the storage array (and in JSON
// a string).
func opaqueText(text valueWriter) extensionInfo {
	return extensionInfo{normalise: fixed(arrow.BinaryTypes.String, func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		return buildStrings(mem, storageOf(a), text) // the storage has a's validity
	}), text: func(dst []byte, a arrow.Array, i int) []byte { return text(dst, storageOf(a), i) }}
}
