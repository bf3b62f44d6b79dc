//go:build sqlengines

package sqlengine

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// startTimeout bounds how long an engine may take to accept connections.
const startTimeout = 60 * time.Second

// Kind names an engine this package runs.
type Kind string

// The engines.
const (
	PostgreSQL Kind = "PostgreSQL"
	MariaDB    Kind = "MariaDB"
)

// engine is one running database server process and its directory.
type engine struct {
	kind    Kind
	dir     string // temporary; removed by stop
	dsn     func(db, tz string) (driver, dsn string)
	cmd     *exec.Cmd
	exited  chan struct{} // closed when cmd has exited
	waitErr error         // cmd.Wait's result, set before exited closes
	admin   *sql.DB       // the engine's own database, for CREATE DATABASE
	name    string        // what GetSqlInfo reports as the server name
	version string        // and as its version
}

var engines struct {
	mu      sync.Mutex
	running map[Kind]*engine
	failed  map[Kind]error
}

// get returns the running engine of kind k, starting it on first use. A
// start that failed is not retried: every later test gets its error.
func get(k Kind) (*engine, error) {
	engines.mu.Lock()
	defer engines.mu.Unlock()
	if e := engines.running[k]; e != nil {
		return e, nil
	}
	if err := engines.failed[k]; err != nil {
		return nil, err
	}
	e, err := start(k)
	if err != nil {
		if engines.failed == nil {
			engines.failed = map[Kind]error{}
		}
		engines.failed[k] = err
		return nil, err
	}
	if engines.running == nil {
		engines.running = map[Kind]*engine{}
	}
	engines.running[k] = e
	return e, nil
}

// kinds says, per engine, the system user it runs as when the tests run
// as root, and how it is set up and started in its directory.
var kinds = map[Kind]struct {
	user  string
	start func(e *engine, a account, log *os.File) error
}{
	PostgreSQL: {"postgres", startPostgres},
	MariaDB:    {"mysql", startMariaDB},
}

// start starts an engine of kind k in a new private directory, its log
// there; on failure nothing is left behind.
func start(k Kind) (*engine, error) {
	spec := kinds[k]
	a, err := accountFor(spec.user)
	if err != nil {
		return nil, err
	}
	dir, err := a.tempDir("quiver-" + strings.ToLower(string(k)) + "-")
	if err != nil {
		return nil, err
	}
	e := &engine{kind: k, dir: dir}
	log, err := a.createLog(dir)
	if err == nil {
		defer log.Close()
		err = spec.start(e, a, log)
	}
	if err != nil {
		_ = e.stop()
		return nil, err
	}
	return e, nil
}

// Stop stops every engine this process started and removes their
// directories. A test package's TestMain calls it after m.Run.
func Stop() error {
	engines.mu.Lock()
	defer engines.mu.Unlock()
	var errs []error
	for k, e := range engines.running {
		errs = append(errs, e.stop())
		delete(engines.running, k)
	}
	return errors.Join(errs...)
}

// tool finds an engine program: on PATH, else in the first of dirs (glob
// patterns, highest match first) that has it.
func tool(name string, dirs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, pattern := range dirs {
		matches, _ := filepath.Glob(pattern)
		sort.Sort(sort.Reverse(sort.StringSlice(matches)))
		for _, d := range matches {
			if p := filepath.Join(d, name); isExecutable(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("sqlengine: %s not found on PATH or in %s", name, strings.Join(dirs, ", "))
}

func isExecutable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// account is the system user an engine runs as: the current one, or, as
// root (which neither engine accepts), the engine's own system user.
type account struct {
	cred *syscall.Credential // nil: the current user
}

func accountFor(system string) (account, error) {
	if os.Geteuid() != 0 {
		return account{}, nil
	}
	u, err := user.Lookup(system)
	if err != nil {
		return account{}, fmt.Errorf("sqlengine: running as root needs the %s system user (installed with the engine's package): %w", system, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return account{}, fmt.Errorf("sqlengine: user %s: %w", system, err)
	}
	return account{cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}, nil
}

// tempDir makes a private directory owned by the account.
func (a account) tempDir(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", fmt.Errorf("sqlengine: %w", err)
	}
	if a.cred != nil {
		if err := os.Chown(dir, int(a.cred.Uid), int(a.cred.Gid)); err != nil {
			_ = os.RemoveAll(dir)
			return "", fmt.Errorf("sqlengine: %w", err)
		}
	}
	return dir, nil
}

// createLog creates the engine's log file in dir, writable by the account
// (mariadbd opens it itself).
func (a account) createLog(dir string) (*os.File, error) {
	log, err := os.Create(filepath.Join(dir, "log"))
	if err == nil && a.cred != nil {
		err = log.Chown(int(a.cred.Uid), int(a.cred.Gid))
	}
	if err != nil {
		return nil, fmt.Errorf("sqlengine: %w", err)
	}
	return log, nil
}

// command builds a command run as the account, killed if this process
// dies, its output appended to log.
func (a account) command(log *os.File, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = sysProcAttr(a.cred)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return cmd
}

// run runs a setup program to completion, bounded by startTimeout.
func (a account) run(log *os.File, name string, args ...string) error {
	cmd := a.command(log, name, args...)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("sqlengine: %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("sqlengine: %s: %w\n%s", filepath.Base(name), err, tail(log.Name()))
		}
		return nil
	case <-time.After(startTimeout):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("sqlengine: %s did not finish in %s\n%s", filepath.Base(name), startTimeout, tail(log.Name()))
	}
}

// serve starts the engine's server process and waits until admin answers.
func (e *engine) serve(a account, log *os.File, name string, args ...string) error {
	e.cmd = a.command(log, name, args...)
	if err := e.cmd.Start(); err != nil {
		return fmt.Errorf("sqlengine: %s: %w", name, err)
	}
	e.exited = make(chan struct{})
	go func() { e.waitErr = e.cmd.Wait(); close(e.exited) }()
	deadline := time.Now().Add(startTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := e.admin.PingContext(ctx)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-e.exited:
			return fmt.Errorf("sqlengine: %s exited while starting (%v)\n%s", filepath.Base(name), e.waitErr, tail(log.Name()))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			// Not left running: a retry starts another one.
			_ = e.cmd.Process.Kill()
			<-e.exited
			return fmt.Errorf("sqlengine: %s not ready after %s: %w\n%s", filepath.Base(name), startTimeout, err, tail(log.Name()))
		}
	}
}

// stop asks the server to shut down (SIGTERM: MariaDB's normal shutdown,
// PostgreSQL's smart one; SIGINT would be PostgreSQL's fast one), kills it
// after 20 s, and removes the directory.
func (e *engine) stop() error {
	var errs []error
	if e.admin != nil {
		errs = append(errs, e.admin.Close())
	}
	if e.cmd != nil && e.cmd.Process != nil {
		sig := map[Kind]os.Signal{PostgreSQL: os.Interrupt, MariaDB: syscall.SIGTERM}[e.kind]
		_ = e.cmd.Process.Signal(sig)
		select {
		case <-e.exited:
		case <-time.After(20 * time.Second):
			_ = e.cmd.Process.Kill()
			<-e.exited
			errs = append(errs, fmt.Errorf("sqlengine: %s did not stop in 20 s: killed", e.kind))
		}
	}
	errs = append(errs, os.RemoveAll(e.dir))
	return errors.Join(errs...)
}

// freePort is a TCP port on 127.0.0.1 nothing listens on at the moment.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("sqlengine: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail is the end of a log file, for error messages.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

// startPostgres runs initdb into a temporary directory and postgres on a
// free 127.0.0.1 port (its socket in that directory), without fsync.
func startPostgres(e *engine, a account, log *os.File) error {
	dirs := []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin"}
	initdb, err := tool("initdb", dirs...)
	if err != nil {
		return fmt.Errorf("%w: install PostgreSQL's server (Debian: apt-get install postgresql)", err)
	}
	postgres, err := tool("postgres", filepath.Dir(initdb))
	if err != nil {
		return err
	}
	data := filepath.Join(e.dir, "data")
	if err := a.run(log, initdb, "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return err
	}
	// A port found free may be taken before postgres binds it: try again.
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			return err
		}
		e.dsn = func(db, tz string) (string, string) {
			return "pgx", fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&timezone=%s", port, db, url.QueryEscape(tz))
		}
		_, dsn := e.dsn("postgres", "UTC")
		if e.admin, err = sql.Open("pgx", dsn); err != nil {
			return fmt.Errorf("sqlengine: %w", err)
		}
		err = e.serve(a, log, postgres, "-D", data, "-k", e.dir, "-p", strconv.Itoa(port),
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=50")
		if err == nil {
			break
		}
		_ = e.admin.Close()
		e.admin = nil
		if attempt == 2 || !strings.Contains(tail(log.Name()), "could not bind") {
			return err
		}
	}
	e.name = "PostgreSQL"
	if err := e.admin.QueryRow("SHOW server_version").Scan(&e.version); err != nil {
		return fmt.Errorf("sqlengine: %w", err)
	}
	return nil
}

// startMariaDB runs mariadb-install-db into a temporary directory and
// mariadbd on a unix socket there (no TCP), and loads the time zones
// America/New_York and UTC into its zone tables.
func startMariaDB(e *engine, a account, log *os.File) error {
	install, err := tool("mariadb-install-db", "/usr/bin")
	if err != nil {
		return fmt.Errorf("%w: install MariaDB's server (Debian: apt-get install mariadb-server)", err)
	}
	mariadbd, err := tool("mariadbd", "/usr/sbin", "/usr/libexec")
	if err != nil {
		return err
	}
	tzinfo, err := tool("mariadb-tzinfo-to-sql", "/usr/bin")
	if err != nil {
		return err
	}
	data, sock := filepath.Join(e.dir, "data"), filepath.Join(e.dir, "sock")
	if err := a.run(log, install, "--no-defaults", "--datadir="+data, "--auth-root-authentication-method=normal",
		"--skip-test-db", "--skip-name-resolve"); err != nil {
		return err
	}
	e.dsn = func(db, tz string) (string, string) {
		return "mysql", fmt.Sprintf("root@unix(%s)/%s?time_zone=%s&multiStatements=true", sock, db, url.QueryEscape("'"+tz+"'"))
	}
	_, dsn := e.dsn("", "+00:00")
	if e.admin, err = sql.Open("mysql", dsn); err != nil {
		return fmt.Errorf("sqlengine: %w", err)
	}
	if err := e.serve(a, log, mariadbd, "--no-defaults", "--datadir="+data, "--socket="+sock,
		"--skip-networking", "--skip-name-resolve", "--skip-log-bin", "--pid-file="+filepath.Join(e.dir, "pid"),
		"--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=0", "--log-error="+log.Name()); err != nil {
		return err
	}
	// Named zones need the zone tables; two are enough for the tests.
	for _, z := range []string{"UTC", "America/New_York"} {
		var out bytes.Buffer
		cmd := exec.Command(tzinfo, "/usr/share/zoneinfo/"+z, z)
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("sqlengine: %s %s: %w", filepath.Base(tzinfo), z, err)
		}
		if _, err := e.admin.Exec("USE mysql; " + out.String()); err != nil {
			return fmt.Errorf("sqlengine: loading time zone %s: %w", z, err)
		}
	}
	if err := e.admin.QueryRow("SELECT VERSION()").Scan(&e.version); err != nil {
		return fmt.Errorf("sqlengine: %w", err)
	}
	e.name = "MySQL"
	if strings.Contains(strings.ToLower(e.version), "mariadb") {
		e.name = "MariaDB"
	}
	return nil
}
