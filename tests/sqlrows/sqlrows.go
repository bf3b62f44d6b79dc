// Package sqlrows is what the real-engine test servers (tests/engine,
// tests/sqlengine) share: running SQL on a test engine's database/sql
// handle directly (setup statements, and the rows of a reference query as
// the driver returns them), the FlightInfo of a statement, and reading the
// server's name and version back.
package sqlrows

import (
	"database/sql"
	"testing"
)

// Exec runs stmts on db; it fails t on error, the error prefixed by who.
func Exec(t testing.TB, who string, db *sql.DB, stmts string) {
	t.Helper()
	if _, err := db.Exec(stmts); err != nil {
		t.Fatalf("%s: %v\n%s", who, err, stmts)
	}
}

// All runs query on db and returns every row, each value as the driver
// returns it; it fails t on error, the error prefixed by who.
func All(t testing.TB, who string, db *sql.DB, query string, args ...any) [][]any {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", who, err, query)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatalf("%s: %v", who, err)
	}
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v\n%s", who, err, query)
	}
	return out
}
