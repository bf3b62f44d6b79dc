// Vendor types that Arrow marks arrow.opaque: the ones this package reads
// (opaqueForms, in types.go), and the notice for the others.

package flightsql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/quiverdata/quiver/pkg/source"
)

// normaliseOpaque reads the vendor types of opaqueForms; any other opaque
// type is its storage's (base64 or text), with a notice naming it.
func normaliseOpaque(name string, dt arrow.DataType) conversion {
	o := dt.(*extensions.OpaqueType)
	if f, ok := opaqueForms[opaqueKey{o.VendorName, o.TypeName}]; ok && f.fits(o.Storage) {
		return f.conversion(name, dt)
	}
	c := normaliseStorage(name, dt)
	shown := "as text"
	if c.out.ID() == arrow.STRING && o.Storage.ID() != arrow.STRING {
		shown = "as base64 of their bytes"
	}
	c.notice = fmt.Sprintf("Column %s holds values of type %s from %s that Arrow does not describe: they are shown %s.", source.Quote(name), source.Quote(o.TypeName), source.Quote(o.VendorName), shown)
	return c
}

// opaqueKey names a vendor's type that Arrow marks arrow.opaque.
type opaqueKey struct{ vendor, name string }

// opaqueForm reads one vendor type from its opaque storage: as an exact
// number (number) or as text (text).
type opaqueForm struct {
	width  int // the storage's fixed_size_binary width; 0: binary
	number *decimalReader
	text   valueWriter // of the storage array
}

func (f opaqueForm) fits(storage arrow.DataType) bool {
	if f.width == 0 {
		return storage.ID() == arrow.BINARY
	}
	fs, ok := storage.(*arrow.FixedSizeBinaryType)
	return ok && fs.ByteWidth == f.width
}

func (f opaqueForm) conversion(_ string, _ arrow.DataType) conversion {
	if f.number != nil {
		return conversion{out: arrow.PrimitiveTypes.Float64, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
			return exactToFloat(mem, a.(array.ExtensionArray).Storage(), *f.number, 0)
		}}
	}
	return conversion{out: arrow.BinaryTypes.String, convert: func(mem memory.Allocator, a arrow.Array) (arrow.Array, found, error) {
		st := a.(array.ExtensionArray).Storage()
		return buildStrings(mem, a, func(dst []byte, i int) []byte { return f.text(dst, st, i) })
	}}
}

// opaqueText appends the text of a known opaque value, and says whether it
// is a number; ok is false for an opaque type opaqueForms does not know.
func opaqueText(dst []byte, e array.ExtensionArray, i int) (out []byte, number, ok bool) {
	o, isOpaque := e.ExtensionType().(*extensions.OpaqueType)
	if !isOpaque {
		return dst, false, false
	}
	f, known := opaqueForms[opaqueKey{o.VendorName, o.TypeName}]
	if !known || !f.fits(o.Storage) {
		return dst, false, false
	}
	if f.number != nil {
		return f.number.appendDigits(dst, e.Storage(), i), true, true
	}
	return f.text(dst, e.Storage(), i), false, true
}
