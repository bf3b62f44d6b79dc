// Finding each row's series: label values hashed where they lie, an open-addressing table, guesses before hashing.

package series

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"math/bits"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/quiverdata/quiver/pkg/source"
)

// lookupRows sets ids[i] to the series of row i (-1 for a null time).
func (b *Builder) lookupRows(tcol arrow.Array, timeNulls bool, ids []int32) error {
	b.hashRows(len(ids))
	for i, h := range b.hashes[:len(ids)] {
		if timeNulls && tcol.IsNull(i) {
			ids[i] = -1
			b.nulls++
			continue
		}
		id, err := b.lookup(i, h)
		if err != nil {
			return err
		}
		ids[i] = id
	}
	return nil
}

// lookupText is lookupRows for the common result of one text label column
// without nulls (and no null times): hash, probe and compare in one pass.
//
// Before hashing, a row tries two guesses, each checked by comparing its
// text with the series' (so a wrong guess costs one comparison): the series
// of the previous row (results ordered by series), and the series of the row
// one period back, the period being the number of series (results ordered by
// time, every series at every time: GROUP BY time, host). The rows looked
// back at may be in earlier batches: all holds the series of every pending
// row (-1 for a null time), the batch's from index k on. The guess that hit
// last is tried first. cyclic reports that every row was the series of the
// row one period back (no other path was taken).
//
// It is over 80 lines: it is the split's hottest loop (BenchmarkSeriesSplit),
// whose guesses, hand-inlined comparison and probe share the loop's state
// (i, d, words), so it stays one function.
func (b *Builder) lookupText(str *array.String, all []int32, k int) (cyclic bool, err error) {
	ids := all[k:]
	slow := false
	offs, data := str.ValueOffsets(), str.ValueBytes()
	base := int(offs[0])
	words := b.words
	for i := 0; i < len(ids); i++ {
		// The rows the guess tried first finds, in tight loops.
		d := 1
		if b.periodFirst {
			d = len(b.series)
		}
		// The row d back in an earlier batch: compare with its series' label.
		for ; i < len(ids) && i < d && k+i >= d; i++ {
			id := all[k+i-d]
			if id < 0 || !words[id].match(data, int(offs[i])-base, int(offs[i+1]-offs[i]), b.keys[id]) {
				break
			}
			ids[i] = id
		}
		// Every further row the same as the row d back (a cycle of labels,
		// as a time-ordered result of every series at every time has):
		// checked for the whole batch at once.
		if d > 0 && i == d && d < len(ids) && periodicText(offs, data, d) {
			for j := d; j < len(ids); j += d {
				copy(ids[j:min(j+d, len(ids))], ids[j-d:j])
			}
			break
		}
		// The row d back in this batch (whose rows all have a series):
		// compare the two rows' text.
		if d > 0 && i >= d {
			for ; i < len(ids); i++ {
				j := i - d
				o1, o2 := int(offs[j])-base, int(offs[i])-base
				n1, n2 := int(offs[j+1])-base-o1, int(offs[i+1])-base-o2
				if n1 == n2 && n2 <= 16 && o2+16 <= len(data) { // compared as two words
					m0, m1 := wordMasks(n2)
					x0 := binary.LittleEndian.Uint64(data[o1:]) ^ binary.LittleEndian.Uint64(data[o2:])
					x1 := binary.LittleEndian.Uint64(data[o1+8:]) ^ binary.LittleEndian.Uint64(data[o2+8:])
					if x0&m0|x1&m1 != 0 {
						break
					}
				} else if n1 != n2 || string(data[o1:o1+n1]) != string(data[o2:o2+n2]) {
					break
				}
				ids[i] = ids[j]
			}
		}
		if i == len(ids) {
			break
		}
		slow = true
		o, n := int(offs[i])-base, int(offs[i+1]-offs[i])
		if d2 := 1 + len(b.series) - d; d2 != d && d2 > 0 && k+i >= d2 {
			if id := all[k+i-d2]; id >= 0 && words[id].match(data, o, n, b.keys[id]) {
				ids[i] = id
				b.periodFirst = !b.periodFirst // the other guess first from now on
				continue
			}
		}
		v := data[o : o+n]
		h := mixHash(0, maphash.Bytes(labelSeed, v))
		mask := uint64(len(b.slots) - 1)
		p := h & mask
		for {
			sid := b.slots[p]
			if sid == 0 {
				id, err := b.create(i, h, p)
				if err != nil {
					return false, err
				}
				words = b.words
				ids[i] = id
				break
			}
			if id := sid - 1; b.hashOf[id] == h && b.present[id] && b.keys[id] == string(v) {
				ids[i] = id
				break
			}
			p = (p + 1) & mask
		}
	}
	return !slow && b.periodFirst, nil
}

// keyWords is the label of a series with one label column, for comparing
// it with a row's text in a few instructions: its length (-1 when the label
// is null, which no text matches) and, when it is at most 16 bytes, its
// bytes as two little-endian words (zero past its end).
type keyWords struct {
	w0, w1 uint64
	n      int
}

func newKeyWords(key string, present bool) keyWords {
	if !present {
		return keyWords{n: -1}
	}
	kw := keyWords{n: len(key)}
	if len(key) <= 16 {
		var buf [16]byte
		copy(buf[:], key)
		kw.w0, kw.w1 = binary.LittleEndian.Uint64(buf[:8]), binary.LittleEndian.Uint64(buf[8:])
	}
	return kw
}

// wordMasks are the masks of the bytes of an n-byte text (n ≤ 16) in its
// two words.
func wordMasks(n int) (m0, m1 uint64) {
	return ^uint64(0) >> (64 - 8*min(n, 8)), ^uint64(0) >> (64 - 8*min(max(n-8, 0), 8))
}

// match reports whether data[o:o+n] is the label of series id (key).
func (kw *keyWords) match(data []byte, o, n int, key string) bool {
	if kw.n != n {
		return false
	}
	if n <= 16 && o+16 <= len(data) {
		m0, m1 := wordMasks(n)
		w0, w1 := binary.LittleEndian.Uint64(data[o:]), binary.LittleEndian.Uint64(data[o+8:])
		return w0&m0 == kw.w0 && w1&m1 == kw.w1
	}
	return key == string(data[o:o+n])
}

// periodicText reports whether every row i ≥ d of a text column (offsets
// offs, bytes data from offs[0] on) has the text of row i-d: each row as
// long as the one d back, so that its bytes are those of the row d back
// moved by the length p of the first d rows, and the bytes equal to those
// p before them.
func periodicText(offs []int32, data []byte, d int) bool {
	p := offs[d] - offs[0]
	for i := d; i < len(offs); i++ {
		if offs[i]-offs[i-d] != p {
			return false
		}
	}
	end := int(offs[len(offs)-1] - offs[0])
	return bytes.Equal(data[p:end], data[:end-int(p)])
}

// bind points the label accessors at the columns of rec.
func (b *Builder) bind(rec arrow.RecordBatch) {
	for k, li := range b.labelIdx {
		a := rec.Column(li)
		str, _ := a.(*array.String)
		b.labels[k] = labelAccess{a: a, str: str, nulls: a.NullN() > 0, text: b.labels[k].text}
	}
}

// lookup returns the series of row i of the bound batch, whose labels hash
// to h, creating it when new.
func (b *Builder) lookup(i int, h uint64) (int32, error) {
	mask := uint64(len(b.slots) - 1)
	for p := h & mask; ; p = (p + 1) & mask {
		sid := b.slots[p]
		if sid == 0 {
			return b.create(i, h, p)
		}
		if id := sid - 1; b.hashOf[id] == h && b.sameLabels(i, id) {
			return id, nil
		}
	}
}

// grow returns s resliced to n elements, reallocated when too small.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

const nullHash = 0x9e3779b97f4a7c15

// mixHash folds the hash of one more label value into h.
func mixHash(h, v uint64) uint64 { return (bits.RotateLeft64(h, 27) ^ v) * 0xff51afd7ed558ccd }

// hashRows sets b.hashes[i] to the hash of row i's label values, one label
// column at a time. Text columns hash their bytes in place; other label
// types (bool, timestamp, JSON) hash their label text.
func (b *Builder) hashRows(n int) {
	h := grow(b.hashes, n)
	b.hashes = h
	clear(h)
	for _, la := range b.labels {
		switch {
		case la.str != nil && !la.nulls:
			for i := range h {
				h[i] = mixHash(h[i], maphash.String(labelSeed, la.str.Value(i)))
			}
		default:
			for i := range h {
				var v uint64
				switch {
				case la.nulls && la.a.IsNull(i):
					v = nullHash
				case la.str != nil:
					v = maphash.String(labelSeed, la.str.Value(i))
				default:
					b.text = la.text(b.text[:0], la.a, i)
					v = maphash.Bytes(labelSeed, b.text)
				}
				h[i] = mixHash(h[i], v)
			}
		}
	}
}

// sameLabels reports whether row i of the batch has the labels of series id.
func (b *Builder) sameLabels(i int, id int32) bool {
	base := int(id) * len(b.labels)
	for k := range b.labels {
		la := &b.labels[k]
		if la.nulls && la.a.IsNull(i) {
			if b.present[base+k] {
				return false
			}
			continue
		}
		if !b.present[base+k] {
			return false
		}
		if la.str != nil {
			if la.str.Value(i) != b.keys[base+k] {
				return false
			}
			continue
		}
		b.text = la.text(b.text[:0], la.a, i)
		if string(b.text) != b.keys[base+k] {
			return false
		}
	}
	return true
}

// create adds the series of row i (whose labels hash to h) in slot.
func (b *Builder) create(i int, h uint64, slot uint64) (int32, error) {
	if max := b.cfg.Limits.MaxSeries; max > 0 && (len(b.series)+1)*len(b.valueIdx) > max {
		return 0, b.cfg.Limits.Series("series").Exceeded("flightsql: the query returns", "filter or group by fewer labels")
	}
	s := &series{id: int32(len(b.series))}
	if len(b.labels) > 0 {
		s.labels = data.Labels{}
	}
	for k, la := range b.labels {
		text, present := "", !la.a.IsNull(i)
		if present {
			text = string(la.text(nil, la.a, i))
			s.labels[b.labelNames[k]] = text
		}
		b.keys, b.present = append(b.keys, text), append(b.present, present)
	}
	if len(b.labels) == 1 {
		b.words = append(b.words, newKeyWords(b.keys[s.id], b.present[s.id]))
	}
	b.runs, b.series, b.hashOf = append(b.runs, nil), append(b.series, s), append(b.hashOf, h)
	id := int32(len(b.series))
	b.slots[slot] = id
	if 2*len(b.series) > len(b.slots) {
		b.rehash()
	}
	return id - 1, nil
}

// rehash doubles the slot table.
func (b *Builder) rehash() {
	b.slots = make([]int32, 2*len(b.slots))
	mask := uint64(len(b.slots) - 1)
	for id, h := range b.hashOf {
		p := h & mask
		for b.slots[p] != 0 {
			p = (p + 1) & mask
		}
		b.slots[p] = int32(id + 1)
	}
}

// UniqueLabels returns names, the label columns' names in order, made
// unique as labels: a later column of a name taken is name_2 (or _3, …),
// since a series' labels are a map and would keep one value of the two.
// renamed is the notice that says so ("" when no name repeats).
func UniqueLabels(names []string) (unique []string, renamed string) {
	taken := make(map[string]bool, len(names))
	for _, n := range names {
		taken[n] = true
	}
	seen := make(map[string]bool, len(names))
	var said []string
	for _, n := range names {
		u := n
		for k := 2; seen[u] || u != n && taken[u]; k++ {
			u = n + "_" + strconv.Itoa(k) // the next, unless a column has that name
		}
		seen[u] = true
		if u != n {
			said = append(said, fmt.Sprintf("%s as %s", source.Quote(n), source.Quote(u)))
		}
		unique = append(unique, u)
	}
	if len(said) > 0 {
		renamed = "Columns share a name, and a label needs its own: the later ones are labelled " + strings.Join(said, ", ") + "."
	}
	return unique, renamed
}
