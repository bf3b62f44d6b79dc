// What a server's stream may make the plugin allocate or recurse into
// before a limit could see it.

package flightsql

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/quiverdata/quiver/pkg/arrowipc"
	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// maxSchemaDepth is how deeply a stream's schema may nest: arrow-go reads
// a schema recursively, a stack frame a level, and a schema a few million
// levels deep (tens of megabytes) overflows the stack, which no recover
// catches. Its reader refuses record batches nested deeper than 64 anyway.
const maxSchemaDepth = 64

// streamGuard watches what one DoGet stream makes arrow-go allocate as it
// reads: the buffers it decompresses, whose lengths the server states (a
// 200-byte message may ask for a terabyte), and the dictionaries it keeps
// (delta dictionaries, which no record batch need follow). One message may
// make it allocate at most most bytes (the most one message of the call
// may carry: for a query, the byteLimit setting and 64 MiB), and the
// stream's dictionaries add up to at most most; past that the allocation panics with the error, which
// arrow-go's reader recovers and reports as the stream's. Allocations run
// on the goroutine that reads the stream, as begin does.
type streamGuard struct {
	memory.Allocator
	most  int64
	used  int64 // by the message being read
	dicts int64 // by the stream's dictionaries, bodies included
	dict  bool  // the message being read is a dictionary batch
}

// begin readies the guard for a message of type typ with a body of n
// bytes, and refuses a schema whose header nests too deep before arrow-go
// parses it.
func (g *streamGuard) begin(typ ipc.MessageType, header []byte, n int) error {
	switch typ {
	case ipc.MessageSchema:
		depth, err := arrowipc.SchemaDepth(header, maxSchemaDepth)
		if err != nil {
			return source.Upstream(fmt.Errorf("flightsql: the server's schema: %w", err))
		}
		if depth > maxSchemaDepth {
			return source.Upstream(fmt.Errorf("flightsql: the server's schema nests more than %d levels deep", maxSchemaDepth))
		}
	case ipc.MessageDictionaryBatch:
		g.dict = true
		return g.take(int64(n))
	}
	g.dict, g.used = false, 0
	return nil
}

// take counts n more bytes of the message being read.
func (g *streamGuard) take(n int64) error {
	if g.dict {
		if g.dicts += n; g.dicts > g.most {
			return source.LimitExceeded("flightsql: the server's dictionaries add up to more than %s, the most one message of this call may carry", settings.FormatBytes(g.most))
		}
		return nil
	}
	if g.used += n; g.used > g.most {
		return source.LimitExceeded("flightsql: a batch of the server's decompresses to more than %s, the most one message of this call may carry", settings.FormatBytes(g.most))
	}
	return nil
}

func (g *streamGuard) Allocate(n int) []byte {
	if err := g.take(int64(n)); err != nil {
		panic(err)
	}
	return g.Allocator.Allocate(n)
}

func (g *streamGuard) Reallocate(n int, b []byte) []byte {
	if err := g.take(int64(n - len(b))); err != nil {
		panic(err)
	}
	return g.Allocator.Reallocate(n, b)
}
