//go:build mage

// Quiver's build, test and release targets. Run them with `go tool mage
// <target>` (mage is a tool of the module): `go tool mage -l` lists them.
package main

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	// mage:import
	"github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/magefile/mage/mg"
	"github.com/magefile/mage/sh"

	"github.com/quiverdata/quiver/tests/harness"
)

// Default builds the backend for every platform the SDK supports.
var Default = build.BuildAll

func init() {
	// plugin.json lives at the repository root, not under src/.
	if err := build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		cfg.PluginJSONPath = "."
		return cfg, nil
	}); err != nil {
		panic(err)
	}
}

// goTestEnv: the SDK's build flags (the Go build cache is shared with it)
// and cgo, which -race and the real-engine tests need.
var goTestEnv = map[string]string{"CGO_ENABLED": "1"}

// goTestTags: the SDK's JSON build tag, and the tags that compile the
// tests against real SQL engines: DuckDB through duckdb-go, cgo (duckdb,
// duckdb_arrow; see tests/engine), PostgreSQL, MariaDB and Redis servers
// (sqlengines; see tests/sqlengine, SQLEngines installs them). The shipped
// plugin is built without them.
const goTestTags = "arrow_json_stdlib,duckdb,duckdb_arrow,sqlengines"

// Check runs every test the project has, as CI does: formatting and vet,
// the frontend (typecheck, lint, jest, production build, the browser test
// in Chromium), the Go tests with -race (end-to-end tests through the built
// binary and the independent apache-arrow JS reader included) and the fuzz
// targets for a bounded time. It installs what it needs: npm packages, and
// Chromium with apt-get when it runs as root.
func Check() error {
	mg.SerialDeps(GoLint, Frontend, GoTest, Fuzz)
	return nil
}

// Generate writes the files generated from the settings table and the
// codecs (pkg/settings/codecs_gen.go, src/generated/, README's settings
// table): run it after changing pkg/settings/table.go or codec.Specs.
func Generate() error {
	return sh.RunV("go", "generate", "./pkg/settings")
}

// GoLint fails when gofmt would change a file, go vet finds a problem or a
// file generated from the settings table is stale.
func GoLint() error {
	if err := sh.RunV("go", "test", "-tags", "arrow_json_stdlib", "-run", "^TestGeneratedFilesAreCurrent$", "./internal/settingsgen"); err != nil {
		return fmt.Errorf("generated settings files are stale (go tool mage generate): %w", err)
	}
	out, err := sh.Output("gofmt", "-l", "pkg", "internal", "tests", "Magefile.go")
	if err != nil {
		return err
	}
	if out != "" {
		return fmt.Errorf("gofmt would change:\n%s", out)
	}
	pkgs, err := goPackages("arrow_json_stdlib")
	if err != nil {
		return err
	}
	if err := sh.RunV("go", append([]string{"vet", "-tags", "arrow_json_stdlib"}, pkgs...)...); err != nil {
		return err
	}
	if pkgs, err = goPackages(goTestTags); err != nil {
		return err
	}
	return sh.RunWithV(goTestEnv, "go", append([]string{"vet", "-tags", goTestTags}, pkgs...)...)
}

// GoTest runs the Go tests with -race, the real-engine tests included
// (it installs PostgreSQL, MariaDB and Redis first, see SQLEngines). The JS reader
// test must run (it fails instead of skipping when node or its packages
// are missing).
func GoTest() error {
	mg.Deps(SQLEngines)
	if err := npmCI("tests/arrowjs"); err != nil {
		return err
	}
	env := map[string]string{"QUIVER_REQUIRE_NODE": "1"}
	for k, v := range goTestEnv {
		env[k] = v
	}
	pkgs, err := goPackages(goTestTags)
	if err != nil {
		return err
	}
	if err := sh.RunWithV(env, "go", append([]string{"test", "-race", "-tags", goTestTags, "-timeout", "25m"}, pkgs...)...); err != nil {
		return err
	}
	// The race detector makes sync.Pool drop items, so the allocation
	// counts, and the series memory and message bodies given back to the
	// Flight SQL source's pools, are asserted in a run without it; the
	// codec skip's property test, single-goroutine and 30× slower under
	// the detector, runs its full count there too, as do the codec tests at
	// zstd's best-compression levels and the poisoned binary's stress test,
	// whose cost under the detector is the test process's own decoding
	// (the plugin binary never runs under it).
	full := "SteadyStateAllocs|^TestSeriesRecycledMemory$|^TestSeriesRecycleBodies$|^TestStreamBodiesCopy$|^TestSkipNeverChangesDecodedValues$" +
		"|^TestRoundTripAppends$|^TestReusedEncoderIsDeterministic$|^TestConcurrentMixedRoundTrip$|^TestEveryEncoderGoesBack$|^TestLendingUnderPoison$"
	return sh.RunWithV(map[string]string{"CGO_ENABLED": "0"}, "go", "test", "-tags", "arrow_json_stdlib", "-run", full, "-v", "./pkg/...", "./tests/e2e")
}

// goPackages lists the module's Go packages built with tags (and cgo),
// leaving out those the tags exclude (go.mod keeps node_modules out).
func goPackages(tags string) ([]string, error) {
	out, err := sh.OutputWith(goTestEnv, "go", "list", "-tags", tags, "-e", "-f", "{{if .GoFiles}}{{.ImportPath}}{{else if .TestGoFiles}}{{.ImportPath}}{{else if .XTestGoFiles}}{{.ImportPath}}{{end}}", "./...")
	return strings.Fields(out), err
}

// Fuzz runs each fuzz target for a bounded number of executions (its
// corpus is kept in testdata/fuzz), about 30 s and 10 s on the CI machine.
// A count, not a duration: Go 1.26's fuzzing coordinator can report the end
// of a -fuzztime duration itself as a failure, "context deadline exceeded"
// with no failing input (golang/go#75804, fixed in Go 1.27), and a count
// sets no deadline. Minimizing an input is bounded by a count too: each
// new interesting input could otherwise take its 60 s default, which a
// duration used to cut short.
func Fuzz() error {
	for _, t := range []struct{ pkg, name, execs string }{
		{"./pkg/frame", "FuzzAppendFrame", "40000x"},
		{"./pkg/frame", "FuzzLabelsJSON", "50000x"},
	} {
		if err := sh.RunV("go", "test", "-tags", "arrow_json_stdlib", "-run", "^$", "-fuzz", "^"+t.name+"$", "-fuzztime", t.execs, "-fuzzminimizetime", "200x", t.pkg); err != nil {
			return fmt.Errorf("fuzzing %s: %w", t.name, err)
		}
	}
	return nil
}

// Frontend installs the npm packages (the root set: React 18 with @grafana/*
// at the floor the plugin builds against; tests/react19: React 19 with
// @grafana/* 13) and runs typecheck (against both sets' types), lint, jest
// on each React line, the production build, the checks of the built bundle
// (tests/bundle: no bundled copy of what Grafana provides, react/jsx-runtime
// only as an external the declared Grafana versions provide, no React API
// removed in 19; its own tests first, which prove each check can fail) and
// the browser test, which renders the editors on each React line.
func Frontend() error {
	for _, dir := range []string{".", "tests/react19"} {
		if err := npmCI(dir); err != nil {
			return err
		}
	}
	for _, script := range []string{"typecheck", "typecheck:react19", "lint", "test:ci", "test:react19", "build", "check:bundle"} {
		if err := sh.RunV("npm", "run", script); err != nil {
			return fmt.Errorf("npm run %s: %w", script, err)
		}
	}
	if err := ensureChromium(); err != nil {
		return err
	}
	return sh.RunV("npm", "run", "test:browser")
}

// npmCI runs `npm ci` in dir unless its node_modules is newer than its
// package-lock.json.
func npmCI(dir string) error {
	if _, err := exec.LookPath("npm"); err != nil {
		return errors.New("npm is not installed: install Node.js 20 and npm, then run again")
	}
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		return err
	}
	if mods, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil && mods.ModTime().After(lock.ModTime()) {
		return nil
	}
	return sh.RunV("npm", "ci", "--prefix", dir, "--no-audit", "--no-fund")
}

// ensureChromium installs Debian's Chromium for the browser test when it
// is missing and the system allows (root with apt-get); otherwise it says
// what is missing.
func ensureChromium() error {
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return nil
	}
	_, aptErr := exec.LookPath("apt-get")
	if os.Geteuid() != 0 || aptErr != nil {
		return errors.New("the browser test needs Chromium at /usr/bin/chromium: install it (Debian: apt-get install -y chromium) and run again")
	}
	env := map[string]string{"DEBIAN_FRONTEND": "noninteractive"}
	if err := sh.RunWithV(env, "apt-get", "update", "-q"); err != nil {
		return err
	}
	return sh.RunWithV(env, "apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium")
}

// SQLEngines installs the PostgreSQL, MariaDB and Redis servers the
// sqlengines tests run (Debian's postgresql, mariadb-server and
// redis-server) when they are missing
// and the system allows (root with apt-get); otherwise it says what is
// missing. Their packages would start system services: while they install,
// a policy-rc.d that denies it is put in place unless the machine has one
// of its own.
// The tests start private servers of their own (tests/sqlengine,
// tests/redisserver).
func SQLEngines() error {
	// One this target wrote, left behind by an interrupted run, would deny
	// every service start on the machine from then on.
	if b, err := os.ReadFile(sqlPolicy); err == nil && strings.Contains(string(b), sqlPolicyMarker) {
		if err := os.Remove(sqlPolicy); err != nil {
			return err
		}
	}
	var missing []string
	if !anyExecutable("initdb", "/usr/lib/postgresql/*/bin/initdb") {
		missing = append(missing, "postgresql")
	}
	if !anyExecutable("mariadbd", "/usr/sbin/mariadbd") || !anyExecutable("mariadb-install-db", "/usr/bin/mariadb-install-db") {
		missing = append(missing, "mariadb-server")
	}
	if !anyExecutable("redis-server", "/usr/bin/redis-server") {
		missing = append(missing, "redis-server") // the result cache's Redis tests (tests/redisserver)
	}
	if len(missing) == 0 {
		return nil
	}
	_, aptErr := exec.LookPath("apt-get")
	if os.Geteuid() != 0 || aptErr != nil {
		return fmt.Errorf("the sqlengines tests need the PostgreSQL, MariaDB and Redis servers: install %v (Debian: apt-get install -y %s) and run again", missing, strings.Join(missing, " "))
	}
	if _, err := os.Stat(sqlPolicy); errors.Is(err, fs.ErrNotExist) {
		if err := os.WriteFile(sqlPolicy, []byte("#!/bin/sh\n"+sqlPolicyMarker+"\nexit 101\n"), 0o755); err != nil {
			return err
		}
		defer os.Remove(sqlPolicy)
	}
	start := time.Now()
	env := map[string]string{"DEBIAN_FRONTEND": "noninteractive"}
	if err := sh.RunWithV(env, "apt-get", "update", "-q"); err != nil {
		return err
	}
	args := append([]string{"install", "-y", "-q", "--no-install-recommends"}, missing...)
	if err := sh.RunWithV(env, "apt-get", args...); err != nil {
		return err
	}
	fmt.Printf("installed %s in %s\n", strings.Join(missing, " "), time.Since(start).Round(time.Second))
	return nil
}

// sqlPolicy is the policy-rc.d SQLEngines puts in place while it installs,
// known by its marker line.
const sqlPolicy, sqlPolicyMarker = "/usr/sbin/policy-rc.d", "# quiver mage sqlEngines: no service starts while installing"

// anyExecutable says whether name is on PATH or a file matches one of the
// glob patterns.
func anyExecutable(name string, patterns ...string) bool {
	if _, err := exec.LookPath(name); err == nil {
		return true
	}
	for _, p := range patterns {
		if m, _ := filepath.Glob(p); len(m) > 0 {
			return true
		}
	}
	return false
}

// Demo builds gpx_quiver, starts it the way Grafana does, runs the queries
// of the provisioned dashboard against the provisioned demo data sources
// (and a few more codec levels) and prints, per query: frames, rows, body
// bytes raw and on the wire, their ratio, frame bytes and encode time.
func Demo() error {
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "quiver-demo")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bin := filepath.Join(dir, "gpx_quiver")
	if err := harness.Build(ctx, root, "./pkg", bin); err != nil {
		return err
	}
	p, err := harness.Start(bin, os.Stderr)
	if err != nil {
		return err
	}
	defer p.Close()
	rows, err := harness.RunDemo(ctx, p, root)
	if err != nil {
		return err
	}
	return harness.PrintDemo(os.Stdout, rows)
}

// Release builds the frontend and the backend for every platform and zips
// dist/ the way Grafana's catalog expects: quiver-arrow-datasource/ inside
// quiver-arrow-datasource-<version>.zip, the version from package.json.
func Release() error {
	if err := npmCI("."); err != nil {
		return err
	}
	if err := sh.RunV("npm", "run", "build"); err != nil {
		return err
	}
	mg.Deps(build.BuildAll)
	var pkg struct {
		Version string `json:"version"`
	}
	b, err := os.ReadFile("package.json")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Version == "" {
		return fmt.Errorf("package.json: no version (%v)", err)
	}
	name := fmt.Sprintf("quiver-arrow-datasource-%s.zip", pkg.Version)
	if err := zipDir("dist", "quiver-arrow-datasource", name); err != nil {
		return err
	}
	fmt.Printf("wrote %s (GOOS/GOARCH of this machine: %s/%s)\n", name, runtime.GOOS, runtime.GOARCH)
	return nil
}

// zipDir writes every file under dir into the zip file out, below prefix/,
// keeping executable bits.
func zipDir(dir, prefix, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := zip.FileInfoHeader(info)
		if err != nil {
			return err
		}
		hdr.Name = prefix + "/" + filepath.ToSlash(rel)
		hdr.Method = zip.Deflate
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return err
		}
		src, err := os.Open(path)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(w, src)
		return err
	})
	if err != nil {
		zw.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
