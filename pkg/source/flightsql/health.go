package flightsql

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/settings"
	"github.com/quiverdata/quiver/pkg/source"
)

// fallbackWorthy reports whether a failed GetSqlInfo may still leave a
// working server: not for connection, TLS, authentication or timeouts. A
// refusal of GetSqlInfo alone (PermissionDenied) may: a server may keep its
// metadata from accounts that may query; SELECT 1 then tells.
func fallbackWorthy(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || source.KindOf(err) == source.KindQuery {
		return false // KindQuery: the plugin refused the call (ErrNoSignedInUser)
	}
	switch status.Code(err) { // of the status an upstreamError wraps, too: status.Code unwraps
	case codes.Unauthenticated, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return false
	}
	return true
}

// readInfo gets a FlightInfo from call and hands every batch of every
// endpoint to fn, without limits or normalisation (for small metadata
// results). Records are valid only during fn.
func (s *Source) readInfo(ctx context.Context, what string, call func(context.Context) (*flight.FlightInfo, error), fn func(arrow.RecordBatch) error) error {
	info, err := do(ctx, s.conn, call)
	if err != nil {
		return s.conn.upstream(ctx, what, err)
	}
	for i, ep := range info.GetEndpoint() {
		if err := s.readAllOf(ctx, ep, fmt.Sprintf("%s: endpoint %d of %d", what, i+1, len(info.GetEndpoint())), fn); err != nil {
			return err
		}
	}
	return nil
}

// readAllOf reads one endpoint of a metadata call. Its messages are bounded
// by the schema browser's byte bound, not the byte limit of queries: a
// larger one could only fail that bound once it had been received whole.
func (s *Source) readAllOf(ctx context.Context, ep *flight.FlightEndpoint, what string, fn func(arrow.RecordBatch) error) error {
	most := int(s.bounds.bytes) + metadataSlack
	rdr, _, stop, err := s.doGet(ctx, ep, what, most)
	if err != nil {
		return err
	}
	defer rdr.Release()
	defer stop()
	for rdr.Next() {
		if err := fn(rdr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rdr.Err(); err != nil {
		if status.Code(err) == codes.ResourceExhausted && strings.Contains(err.Error(), "larger than max") {
			return source.LimitExceeded("flightsql: %s: the server sent a message of more than %s, the bound of metadata calls; narrow the listing with the catalog and schema settings", what, settings.FormatBytes(int64(most)))
		}
		return s.conn.upstream(ctx, what, err)
	}
	return nil
}

// metadataSlack is what a metadata call's message may weigh above the
// schema browser's byte bound: the batch's offsets, validity and framing.
const metadataSlack = 1 << 20
