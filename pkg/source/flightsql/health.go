package flightsql

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/quiverdata/quiver/pkg/source"
)

// fallbackWorthy reports whether a failed GetSqlInfo may still leave a
// working server: not for connection, TLS, authentication or timeouts.
func fallbackWorthy(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || source.KindOf(err) == source.KindQuery {
		return false // KindQuery: the plugin refused the call (ErrNoSignedInUser)
	}
	var ue *upstreamError
	if errors.As(err, &ue) {
		err = ue.err
	}
	switch status.Code(err) {
	case codes.Unauthenticated, codes.PermissionDenied, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return false
	}
	return true
}

// readInfo gets a FlightInfo from call and hands every batch of every
// endpoint to fn, without limits or normalisation (for small metadata
// results). Records are valid only during fn.
func (s *Source) readInfo(ctx context.Context, what string, call func(context.Context) (*flight.FlightInfo, error), fn func(arrow.RecordBatch) error) error {
	var info *flight.FlightInfo
	err := s.conn.do(ctx, func(cctx context.Context) (err error) {
		info, err = call(cctx)
		return err
	})
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

func (s *Source) readAllOf(ctx context.Context, ep *flight.FlightEndpoint, what string, fn func(arrow.RecordBatch) error) error {
	rdr, _, stop, err := s.doGet(ctx, ep, what)
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
		return s.conn.upstream(ctx, what, err)
	}
	return nil
}
