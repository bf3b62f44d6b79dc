//go:build sqlengines

// Package sqlengine serves real SQL engine servers, PostgreSQL and MariaDB,
// over Apache Arrow Flight SQL on 127.0.0.1, so that the Flight SQL
// source's postgres and mysql dialects are tested against the engines' own
// SQL, types and session time zones. It is pure Go (database/sql through
// pgx and go-sql-driver/mysql), compiled only with the build tag
// sqlengines, and imported by tests only.
//
// It owns three things:
//   - the engine processes (engine.go): one PostgreSQL (initdb into a
//     temporary directory, postgres on a free 127.0.0.1 port) and one
//     MariaDB (mariadb-install-db, mariadbd on a unix socket, no TCP) per
//     test binary, started on first use, run as the postgres / mysql system
//     user when the tests run as root, killed with the test binary
//     (Pdeathsig) and stopped by Stop, which the test package's TestMain
//     calls;
//   - the Flight SQL server (server.go): GetFlightInfoStatement and
//     DoGetStatement run the statement on the engine through database/sql;
//     GetSqlInfo answers FLIGHT_SQL_SERVER_NAME and _VERSION as the engine
//     reports itself ("PostgreSQL" and `SHOW server_version`, "MariaDB" and
//     `SELECT VERSION()`);
//   - the Arrow conversion (arrow.go): a table from the engine's column
//     type names to Arrow types and readers.
//
// Each Serve creates a fresh database on the shared engine, with every
// connection's session time zone set (PostgreSQL TimeZone, MariaDB
// time_zone), so tests do not see each other's tables.
package sqlengine
