package sqlrows

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
)

// StatementInfo is the FlightInfo both servers answer a statement with:
// one endpoint whose ticket is the statement itself, no counts.
func StatementInfo(cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	tkt, err := flightsql.CreateStatementQueryTicket([]byte(cmd.GetQuery()))
	if err != nil {
		return nil, err
	}
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		FlightDescriptor: desc,
		TotalRecords:     -1,
		TotalBytes:       -1,
	}, nil
}

// ServerInfo returns the server name and version a Flight SQL server
// reports through GetSqlInfo; it fails t on error.
func ServerInfo(t testing.TB, ctx context.Context, cl *flightsql.Client) (name, version string) {
	t.Helper()
	info, err := cl.GetSqlInfo(ctx, []flightsql.SqlInfo{flightsql.SqlInfoFlightSqlServerName, flightsql.SqlInfoFlightSqlServerVersion})
	if err != nil {
		t.Fatal(err)
	}
	rdr, err := cl.DoGet(ctx, info.GetEndpoint()[0].GetTicket())
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	found := map[uint32]string{}
	for rdr.Next() {
		rec := rdr.RecordBatch()
		names := rec.Column(0).(*array.Uint32)
		vals := rec.Column(1).(*array.DenseUnion)
		for i := range int(rec.NumRows()) {
			found[names.Value(i)] = vals.Field(vals.ChildID(i)).(*array.String).Value(int(vals.ValueOffset(i)))
		}
	}
	if err := rdr.Err(); err != nil {
		t.Fatal(err)
	}
	return found[uint32(flightsql.SqlInfoFlightSqlServerName)], found[uint32(flightsql.SqlInfoFlightSqlServerVersion)]
}
