package settings

import (
	"strings"
	"testing"
)

// TestAddressCredentialsNotQuoted: an address or host written with
// credentials is refused without quoting them (the message is the health
// check's and every query's, which Grafana logs).
func TestAddressCredentialsNotQuoted(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*FlightSQL)
		want string
	}{
		{func(f *FlightSQL) { f.Address = "grpc+tls://svc:hunter2pass@db:443" }, `settings: address: "grpc+tls://[redacted]@db:443" is not host:port: drop the "grpc+tls://" scheme (turn on tlsEnabled for TLS)`},
		{func(f *FlightSQL) { f.Address = "svc:hunter2pass@db:443" }, `settings: address: "[redacted]@db:443" is not host:port: drop the user name and password`},
		{func(f *FlightSQL) { f.Address = "hunter2pass@db:443" }, `settings: address: "[redacted]@db:443" is not host:port: drop the user name and password`},
		{func(f *FlightSQL) { f.RedisAddress = "redis://default:hunter2pass@cache:6379" }, `settings: redisAddress: "redis://[redacted]@cache:6379" is not host:port: drop the "redis://" scheme (turn on redisTLS for TLS)`},
		{func(f *FlightSQL) { f.RedisAddress = "hunter2pass@cache:6379" }, `settings: redisAddress: "[redacted]@cache:6379" is not host:port: drop the user name and password`},
		{func(f *FlightSQL) { f.AllowedLocationHosts = "u:hunter2pass@d1" }, `settings: allowedLocationHosts: "[redacted]@d1" is not a host`},
	} {
		f := FlightSQL{Address: "db:443", AuthType: AuthNone, Timeout: 30, RowLimit: 1, ByteLimit: 1 << 20, IncrementalOverlap: 60, ResultCacheBytes: 1 << 20, RedisTTL: 60}
		tc.mod(&f)
		err := f.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "hunter2pass") {
			t.Errorf("got %v, want …%s… without the password", err, tc.want)
		}
		if strings.Contains(f.String(), "hunter2pass") {
			t.Errorf("String shows the password: %s", f)
		}
	}
}
