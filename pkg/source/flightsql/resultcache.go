// The result cache: kept answers of incremental queries (incremental.go),
// as compressed Arrow IPC segments, in a store with a byte cap.

package flightsql

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"time"

	"github.com/quiverdata/quiver/pkg/source"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// An entry is one query's kept answer: the rows of its range [from, to],
// in segments, each an Arrow IPC stream compressed with zstd (its string
// columns as lengths: entrystrings.go) and the least and greatest time of
// its rows. A delta query appends a segment of its
// new rows; a segment whose rows fell before a later start is dropped, and
// one that holds rows from cut on is written again without them. So a
// refresh writes only what changed, not the whole answer.
//
// The store keeps an entry as bytes (marshal): a format version, the key
// it was stored under, a CRC-32C of what follows, the range and the
// segments. An entry read under another key, whose checksum does not
// match, or that does not parse is deleted and never used. Only Quiver
// reads them back.

// entryMagic starts every entry; its last byte is the format version.
var entryMagic = [4]byte{'Q', 'V', 'R', 2}

// entryHeader is the magic, the key and the checksum.
const entryHeader = len(entryMagic) + sha256.Size + 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type entry struct {
	key      [sha256.Size]byte
	from, to time.Time
	segs     []segment
}

// segment is an IPC stream of some of an entry's rows.
type segment struct {
	lo, hi int64 // least and greatest time of its rows, ns
	rows   int64
	b      []byte
}

// errEntry marks an entry that is not one of this format and key.
var errEntry = errors.New("flightsql: not a cache entry of this format and key")

func (e *entry) size() int {
	n := entryHeader + 24
	for _, s := range e.segs {
		n += 32 + len(s.b)
	}
	return n
}

func (e *entry) marshal() []byte {
	b := make([]byte, 0, e.size())
	b = append(b, entryMagic[:]...)
	b = append(b, e.key[:]...)
	b = append(b, 0, 0, 0, 0) // the checksum, below
	b = binary.LittleEndian.AppendUint64(b, uint64(e.from.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(e.to.UnixNano()))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(e.segs)))
	for _, s := range e.segs {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.lo))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.hi))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.rows))
		b = binary.LittleEndian.AppendUint64(b, uint64(len(s.b)))
		b = append(b, s.b...)
	}
	binary.LittleEndian.PutUint32(b[entryHeader-4:], crc32.Checksum(b[entryHeader:], castagnoli))
	return b
}

// unmarshalEntry reads an entry stored under key; its segments reference b.
func unmarshalEntry(b []byte, key [sha256.Size]byte) (*entry, error) {
	if len(b) < entryHeader+24 || !bytes.Equal(b[:4], entryMagic[:]) || !bytes.Equal(b[4:4+sha256.Size], key[:]) ||
		binary.LittleEndian.Uint32(b[entryHeader-4:]) != crc32.Checksum(b[entryHeader:], castagnoli) {
		return nil, errEntry
	}
	b = b[entryHeader:]
	u := func() uint64 {
		v := binary.LittleEndian.Uint64(b)
		b = b[8:]
		return v
	}
	e := &entry{key: key}
	e.from, e.to = time.Unix(0, int64(u())), time.Unix(0, int64(u()))
	n := u()
	if n > uint64(len(b))/32 {
		return nil, errEntry
	}
	for range n {
		if len(b) < 32 {
			return nil, errEntry
		}
		s := segment{lo: int64(u()), hi: int64(u()), rows: int64(u())}
		l := u()
		if l > uint64(len(b)) {
			return nil, errEntry
		}
		s.b, b = b[:l:l], b[l:]
		e.segs = append(e.segs, s)
	}
	if len(b) != 0 || e.to.Before(e.from) {
		return nil, errEntry
	}
	return e, nil
}

// segmentWriter writes batches into a new segment.
type segmentWriter struct {
	segment // its times and rows so far; b once finished
	buf     bytes.Buffer
	w       *ipc.Writer
	schema  *arrow.Schema // entrySchema of the result's
	mem     memory.Allocator
}

func newSegmentWriter(schema *arrow.Schema, mem memory.Allocator) *segmentWriter {
	sw := &segmentWriter{segment: segment{lo: 1<<63 - 1, hi: -1 << 63}, schema: entrySchema(schema), mem: mem}
	sw.w = ipc.NewWriter(&sw.buf, ipc.WithSchema(sw.schema), ipc.WithAllocator(mem), ipc.WithZstd(), ipc.WithZstdLevel(1))
	return sw
}

// write adds rec, whose times (ns) are times, to the segment.
func (sw *segmentWriter) write(rec arrow.RecordBatch, times []arrow.Timestamp) error {
	for _, t := range times {
		sw.lo, sw.hi = min(sw.lo, int64(t)), max(sw.hi, int64(t))
	}
	sw.rows += rec.NumRows()
	enc := toEntry(rec, sw.schema, sw.mem)
	defer enc.Release()
	return sw.w.Write(enc)
}

// finish returns the segment, which may hold no row.
func (sw *segmentWriter) finish() (segment, error) {
	err := sw.w.Close()
	sw.b = sw.buf.Bytes()
	return sw.segment, err
}

// readSegment calls fn with each batch of s, whose schema must be want,
// and releases it after; a segment that does not read is a fallback.
func readSegment(s segment, want *arrow.Schema, mem memory.Allocator, fn func(arrow.RecordBatch) error) (err error) {
	defer func() { // arrow-go may panic on bytes that are not a stream
		if p := recover(); p != nil {
			err = fallback{fmt.Sprintf("the kept answer did not read: %v", p)}
		}
	}()
	r, err := ipc.NewReader(bytes.NewReader(s.b), ipc.WithAllocator(mem))
	if err != nil {
		return fallback{"the kept answer did not read: " + err.Error()}
	}
	defer r.Release()
	if !r.Schema().Equal(entrySchema(want)) {
		return fallback{whySchema}
	}
	for r.Next() {
		rec, err := fromEntry(r.RecordBatch(), want, mem)
		if err != nil {
			return fallback{"the kept answer did not read: " + err.Error()}
		}
		err = fn(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	if err := r.Err(); err != nil {
		return fallback{"the kept answer did not read: " + err.Error()}
	}
	return nil
}

// Store keeps cache entries by key. Get returns nil when it has none. A
// store's failure never fails a query: it is answered in full.
type Store interface {
	Get(key string) ([]byte, error)
	Put(key string, b []byte) error
	Delete(key string) error
}

// memoryStore is a Store in the plugin's memory: at most max bytes, the
// least recently used evicted first, and, when budget is set, only what
// the process's memory budget has room for (source.MemoryKeeper). It calls
// the budget with its own lock held, so that what it holds and what the
// budget counts change together; the budget never calls it with the
// budget's lock held (pipeline's Budget.reclaim).
type memoryStore struct {
	max      int64
	observer CacheObserver

	mu     sync.Mutex
	used   int64
	order  *list.List // of *memoryItem, most recent first
	items  map[string]*list.Element
	budget source.Kept // nil: not counted
	closed bool        // cleared for good: Put keeps nothing
}

type memoryItem struct {
	key string
	b   []byte
}

// itemOverhead is about what holds an item besides its key and bytes: the
// item, its list element and its map slot.
const itemOverhead = 160

// itemSize is what an item of key and b costs the store, and the budget.
func itemSize(key string, b []byte) int64 { return int64(len(key)+len(b)) + itemOverhead }

func newMemoryStore(max int64, o CacheObserver) *memoryStore {
	return &memoryStore{max: max, observer: o, order: list.New(), items: map[string]*list.Element{}}
}

func (m *memoryStore) Get(key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[key]
	if !ok {
		return nil, nil
	}
	m.order.MoveToFront(el)
	return el.Value.(*memoryItem).b, nil
}

// Put keeps b (not copied: the caller gives it up), evicting as needed; an
// item costing more than a quarter of the cap is not kept (keeper stores no
// entry past that size, counted without the key and overhead itemSize
// adds, so one just under it is dropped here), nor one the budget has no
// room for after the least recently used entries of its size are evicted.
// The key's previous entry is deleted either way.
func (m *memoryStore) Put(key string, b []byte) error {
	n := itemSize(key, b)
	m.mu.Lock()
	defer m.mu.Unlock()
	before, evicted := m.used, 0
	defer func() { m.observer.Stored(m.used-before, evicted) }()
	m.remove(key)
	if n > m.max/4 || m.closed {
		return nil
	}
	if !m.take(n) {
		evicted += m.evictLocked(n) // the older answers yield to the newer
		if !m.take(n) {
			return nil // the queries in flight need the memory
		}
	}
	m.items[key] = m.order.PushFront(&memoryItem{key: key, b: b})
	m.used += n
	evicted += m.evictLocked(m.used - m.max)
	return nil
}

// Delete deletes the entry of key, if any.
func (m *memoryStore) Delete(key string) error {
	m.observe(func() int {
		m.remove(key)
		return 0
	})
	return nil
}

// evict evicts the least recently used entries until n bytes are freed,
// or none is left.
func (m *memoryStore) evict(n int64) { m.observe(func() int { return m.evictLocked(n) }) }

// observe runs change, which says how many entries it evicted, with the
// lock held, and tells the observer when the bytes held changed.
func (m *memoryStore) observe(change func() (evicted int)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.used
	if evicted := change(); m.used != before {
		m.observer.Stored(m.used-before, evicted)
	}
}

// evictLocked evicts the least recently used entries until n bytes are
// freed, or none is left, and says how many it evicted.
func (m *memoryStore) evictLocked(n int64) int {
	evicted := 0
	for freed := int64(0); freed < n && m.order.Len() > 0; evicted++ {
		before := m.used
		m.remove(m.order.Back().Value.(*memoryItem).key)
		freed += before - m.used
	}
	return evicted
}

// clear drops every entry for good: the source is closed, and what a query
// still running would keep is not kept.
func (m *memoryStore) clear() {
	m.observe(func() int {
		m.closed = true
		m.evictLocked(m.used)
		return 0 // dropped, not evicted
	})
}

// take takes n bytes of the budget (any, when the store is not counted).
func (m *memoryStore) take(n int64) bool { return m.budget == nil || m.budget.TryTake(n) }

// remove removes the entry of key, if any, and gives its bytes back to
// the budget.
func (m *memoryStore) remove(key string) {
	el, ok := m.items[key]
	if !ok {
		return
	}
	it := el.Value.(*memoryItem)
	n := itemSize(it.key, it.b)
	m.used -= n
	m.order.Remove(el)
	delete(m.items, key)
	if m.budget != nil {
		m.budget.Give(n)
	}
}
