package settings

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlightSQLDefaults(t *testing.T) {
	f, err := parseFlightSQL([]byte(`{"address":"db:443"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.AuthType != AuthNone || f.Dialect != DialectAuto || f.Timeout != 30 || f.RowLimit != 1_000_000 || f.ByteLimit != 268435456 {
		t.Fatalf("defaults not applied: %v", f)
	}
	if f.TimeoutDuration() != 30*time.Second {
		t.Fatalf("TimeoutDuration = %v", f.TimeoutDuration())
	}
	if err := f.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	// Empty jsonData parses; Validate then asks for the address.
	f, err = parseFlightSQL(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err == nil || !strings.Contains(err.Error(), `settings: address: required when upstream is "flightsql" (host:port)`) {
		t.Fatalf("want address error, got %v", err)
	}
}

func TestParseFlightSQLAllKeys(t *testing.T) {
	js := `{"address":"h:1","tlsEnabled":true,"tlsSkipVerify":true,"tlsAuthWithCACert":true,"tlsAuth":true,
		"tlsServerName":"sni","authType":"password","username":"u","catalog":"c","schema":"s",
		"dialect":" DuckDB ","oauthPassThru":true,"noForwardedIdentity":"configured","allowedLocationHosts":"d1, d2","timeout":"12","rowLimit":7,"byteLimit":2048,"incrementalQueries":false,"incrementalOverlap":90,"resultCacheBytes":2097152,"redisAddress":" r:6379 ","redisTLS":true,"redisUsername":"ru","redisKeyPrefix":"p:","redisTTL":60,"headerName2":"x-b","headerName1":"X-A","headerName3":"",
		"token":"must-not-be-read"}`
	sec := map[string]string{"token": "tok", "password": "pw", "tlsCACert": "ca", "tlsClientCert": "cc",
		"tlsClientKey": "ck", "headerValue1": "v1", "headerValue2": "v2", "redisPassword": "rp"}
	f, err := parseFlightSQL([]byte(js), sec)
	if err != nil {
		t.Fatal(err)
	}
	want := FlightSQL{Address: "h:1", TLSEnabled: true, TLSSkipVerify: true, TLSAuthWithCACert: true, TLSAuth: true,
		TLSServerName: "sni", AuthType: "password", Username: "u", Catalog: "c", Schema: "s", Dialect: DialectDuckDB,
		OAuthPassThru: true, NoForwardedIdentity: NoIdentityConfigured, AllowedLocationHosts: "d1, d2", Timeout: 12, RowLimit: 7,
		ByteLimit: 2048, IncrementalOverlap: 90, ResultCacheBytes: 2 << 20,
		RedisAddress: "r:6379", RedisTLS: true, RedisUsername: "ru", RedisKeyPrefix: "p:", RedisTTL: 60, RedisPassword: "rp", Headers: []Header{{1, "X-A", "v1"}, {2, "x-b", "v2"}},
		Token: "tok", Password: "pw", TLSCACert: "ca", TLSClientCert: "cc", TLSClientKey: "ck"}
	if fmt.Sprint(f.Headers) != fmt.Sprint(want.Headers) || f.Headers[0].Value.Reveal() != "v1" || f.Headers[1].Value.Reveal() != "v2" {
		t.Fatalf("headers = %+v", f.Headers)
	}
	f.Headers, want.Headers = nil, nil
	if !reflect.DeepEqual(f, want) {
		t.Fatalf("got %#v\nwant %#v", f, want)
	}
}

func TestParseFlightSQLSecretInJSONDataIgnored(t *testing.T) {
	f, err := parseFlightSQL([]byte(`{"password":"p","Token":"t","tlsClientKey":"k"}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Password.IsSet() || f.Token.IsSet() || f.TLSClientKey.IsSet() {
		t.Fatal("a secret was read from jsonData")
	}
}

func TestParseFlightSQLMalformed(t *testing.T) {
	for _, tc := range []struct{ js, want string }{
		{`[1]`, "settings: jsonData is not a JSON object"},
		{`{"timeout":"soon"}`, "settings: timeout:"},
		{`{"rowLimit":1.5}`, "settings: rowLimit:"},
		{`{"tlsEnabled":"yes"}`, "tlsEnabled"},
		{`{"headerName1":5}`, "settings: headerName1: must be a string"},
		{`{"tlsEnabled":"yes"}`, `settings: tlsEnabled: "yes" is not true or false`},
		{`{"tlsEnabled":1}`, `settings: tlsEnabled: "1" is not true or false`},
	} {
		if _, err := parseFlightSQL([]byte(tc.js), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.js, err, tc.want)
		}
	}
}

func TestParseFlightSQLNullAndEmptyGetDefaults(t *testing.T) {
	f, err := parseFlightSQL([]byte(`{"timeout":null,"rowLimit":"","byteLimit":" ","tlsEnabled":"","incrementalQueries":" "}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Timeout != DefaultFlightSQLTimeout || f.RowLimit != DefaultFlightSQLRowLimit || f.ByteLimit != DefaultFlightSQLByteLimit ||
		f.TLSEnabled || !f.IncrementalQueries {
		t.Fatalf("got %v", f)
	}
}

func TestValidateFlightSQL(t *testing.T) {
	caPEM, certPEM, keyPEM := testPKI(t)
	base := func() FlightSQL {
		f, err := parseFlightSQL([]byte(`{"address":"localhost:32010"}`), nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	for _, tc := range []struct {
		name string
		mod  func(*FlightSQL)
		want []string // substrings; none means valid
	}{
		{"ok", func(*FlightSQL) {}, nil},
		{"ipv6", func(f *FlightSQL) { f.Address = "[::1]:443" }, nil},
		{"dialect", func(f *FlightSQL) { f.Dialect = DialectDremio }, nil},
		{"baddialect", func(f *FlightSQL) { f.Dialect = "oracle" }, []string{
			`settings: dialect: "oracle" is not one of "auto", "datafusion", "duckdb", "postgres", "dremio", "mysql", "ansi"`}},
		{"scheme", func(f *FlightSQL) { f.Address = "grpc+tls://h:1" }, []string{`settings: address: "grpc+tls://h:1" is not host:port: drop the "grpc+tls://" scheme`}},
		{"noport", func(f *FlightSQL) { f.Address = "h" }, []string{`settings: address: "h" is not host:port`}},
		{"badport", func(f *FlightSQL) { f.Address = "h:99999" }, []string{`port "99999" is not in 1 – 65535`}},
		{"authType", func(f *FlightSQL) { f.AuthType = "x" }, []string{`settings: authType: "x" is not one of "none", "token", "password"`}},
		{"redis", func(f *FlightSQL) { f.RedisAddress = "redis:6379" }, nil},
		{"redis scheme", func(f *FlightSQL) { f.RedisAddress = "redis://r:6379" }, []string{`settings: redisAddress: "redis://r:6379" is not host:port`}},
		{"redis control", func(f *FlightSQL) { f.RedisAddress, f.RedisKeyPrefix = "r:1", "a\nb" }, []string{"settings: redisUsername, redisKeyPrefix or redisPassword:"}},
		{"redis ttl", func(f *FlightSQL) { f.RedisTTL = 1 }, []string{"redisTTL", "10 to 2592000"}},
		{"overlap", func(f *FlightSQL) { f.IncrementalOverlap = 0 }, []string{"incrementalOverlap"}},
		{"token", func(f *FlightSQL) { f.AuthType = AuthToken }, []string{`settings: token: required when authType is "token"`}},
		{"password", func(f *FlightSQL) { f.AuthType = AuthPassword }, []string{
			`settings: username: required when authType is "password"`, `settings: password: required when authType is "password"`}},
		{"blank username", func(f *FlightSQL) { f.AuthType, f.Username, f.Password = AuthPassword, "   ", "p" }, []string{
			`settings: username: required when authType is "password"`}},
		{"tls off ignores tls options", func(f *FlightSQL) { f.TLSAuth, f.TLSAuthWithCACert = true, true }, nil},
		{"ca missing", func(f *FlightSQL) { f.TLSEnabled, f.TLSAuthWithCACert = true, true }, []string{"settings: tlsCACert: required when tlsAuthWithCACert is on"}},
		{"ca garbage", func(f *FlightSQL) { f.TLSEnabled, f.TLSAuthWithCACert, f.TLSCACert = true, true, "nope" }, []string{"settings: tlsCACert: no PEM certificate found"}},
		{"ca ok", func(f *FlightSQL) { f.TLSEnabled, f.TLSAuthWithCACert, f.TLSCACert = true, true, Secret(caPEM) }, nil},
		{"mtls missing", func(f *FlightSQL) { f.TLSEnabled, f.TLSAuth = true, true }, []string{
			"settings: tlsClientCert: required when tlsAuth is on", "settings: tlsClientKey: required when tlsAuth is on"}},
		{"mtls mismatch", func(f *FlightSQL) {
			f.TLSEnabled, f.TLSAuth, f.TLSClientCert, f.TLSClientKey = true, true, Secret(certPEM), "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
		}, []string{"settings: tlsClientCert/tlsClientKey: not a usable certificate and key pair"}},
		{"mtls ok", func(f *FlightSQL) {
			f.TLSEnabled, f.TLSAuth, f.TLSClientCert, f.TLSClientKey = true, true, Secret(certPEM), Secret(keyPEM)
		}, nil},
		{"timeout", func(f *FlightSQL) { f.Timeout = 0 }, []string{"settings: timeout: 0 is not within 1 to 3600 (seconds)"}},
		{"rowLimit", func(f *FlightSQL) { f.RowLimit = 100_000_001 }, []string{"settings: rowLimit: 100000001 is not within 1 to 100000000 (rows)"}},
		{"byteLimit", func(f *FlightSQL) { f.ByteLimit = 1023 }, []string{"settings: byteLimit: 1023 is not within 1024 to 17179869184 (bytes)"}},
		{"headers", func(f *FlightSQL) {
			f.Headers = []Header{{1, "x-ok", "v"}, {2, "bad key", "v"}, {3, "grpc-timeout", "v"}, {4, "Authorization", "v"}, {5, "X-OK", "v"}, {6, "x-novalue", ""}}
		}, []string{
			`settings: headerName2: "bad key" is not a valid gRPC metadata key`,
			`settings: headerName3: "grpc-timeout" is reserved by gRPC`,
			`settings: headerName4: "Authorization" cannot be set here (use authType "token" or "password")`,
			`settings: headerName5: "X-OK" is already set by headerName1`,
			`settings: headerValue6: required when headerName6 is set`,
		}},
		{"header values", func(f *FlightSQL) {
			f.Headers = []Header{{1, "x-a", "ok\r\nx-injected: 1"}, {2, "x-b", "nul\x00"}, {3, "x-c", "caf\u00e9"}, {4, "x-d", "fine value"}}
		}, []string{
			"settings: headerValue1: contains a line break (byte 3)",
			"settings: headerValue2: contains a NUL byte (byte 4)",
			"settings: headerValue3: contains a byte that is not printable ASCII (byte 4, 0xc3)",
		}},
		{"token text", func(f *FlightSQL) { f.AuthType, f.Token = AuthToken, "abc\ndef" }, []string{"settings: token: contains a line break"}},
		{"password text", func(f *FlightSQL) { f.AuthType, f.Username, f.Password = AuthPassword, "bob\r", "pw\x00" }, []string{
			"settings: username: contains a line break or NUL", "settings: password: contains a line break or NUL"}},
		{"long address", func(f *FlightSQL) { f.Address = strings.Repeat("h", 1<<20) }, []string{"(1048576 bytes) is not host:port"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := base()
			tc.mod(&f)
			err := f.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "injected") || strings.Contains(err.Error(), "def") || len(err.Error()) > 2000 {
				t.Errorf("error echoes a value: %q", err)
			}
		})
	}
}

func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-value"
	f, err := parseFlightSQL([]byte(`{"address":"h:1","authType":"password","username":"bob","headerName1":"x-key"}`),
		map[string]string{"password": secret, "token": secret, "tlsCACert": secret, "tlsClientCert": secret,
			"tlsClientKey": secret, "headerValue1": secret})
	if err != nil {
		t.Fatal(err)
	}
	if f.Password.Reveal() != secret || f.Headers[0].Value.Reveal() != secret {
		t.Fatal("Reveal must return the value")
	}
	var logBuf bytes.Buffer
	slog.New(slog.NewJSONHandler(&logBuf, nil)).Info("settings", "cfg", f, "pw", f.Password)
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("settings", "cfg", f, "pw", f.Password, "headers", f.Headers)
	js, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	jsSecret, err := json.Marshal(struct{ S Secret }{f.Token})
	if err != nil {
		t.Fatal(err)
	}
	outs := []string{
		fmt.Sprint(f), fmt.Sprintf("%v %+v %#v %s %q %x", f, f, f, f, f, f),
		fmt.Sprintf("%v %+v %#v %s %q %x %X %d %10s", f.Password, f.Password, f.Password, f.Password, f.Password, f.Password, f.Password, f.Password, f.Password),
		fmt.Sprintf("%v %+v %#v", f.Headers, f.Headers, f.Headers),
		fmt.Sprintf("%v %+v %#v", &f, &f.Password, []Secret{f.Token}),
		string(js), string(jsSecret), logBuf.String(),
	}
	for _, out := range outs {
		if strings.Contains(out, secret) {
			t.Errorf("secret printed: %s", out)
		}
	}
	if !strings.Contains(fmt.Sprint(f.Password), "[redacted]") || !strings.Contains(string(jsSecret), "[redacted]") {
		t.Error("secret not shown as [redacted]")
	}
	if !strings.Contains(fmt.Sprint(f), `username="bob"`) || !strings.Contains(fmt.Sprint(f), `header1="x-key"`) {
		t.Errorf("String lost the plain settings: %s", f)
	}
}

// testPKI returns a CA certificate and a client certificate + key signed by it, PEM encoded.
func testPKI(t *testing.T) (ca, cert, key []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	cKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	cDER, err := x509.CreateCertificate(rand.Reader, cTmpl, caCert, &cKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kDER, err := x509.MarshalPKCS8PrivateKey(cKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kDER})
}
