// Package redisserver runs a private Redis server (Debian's redis-server,
// which `mage sqlEngines` installs) on 127.0.0.1 for tests: no persistence,
// its files in the test's temporary directory, stopped when the test ends.
package redisserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is one redis-server process; Stop and Start stop it and start it
// again on the same port.
type Server struct {
	Addr string
	t    testing.TB
	dir  string
	port int
	cmd  *exec.Cmd
}

// Start starts a Redis server, failing the test when redis-server is not
// installed.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is not installed (Debian: apt-get install redis-server; mage sqlEngines installs it): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), t: t, dir: t.TempDir(), port: port}
	s.start(bin)
	t.Cleanup(s.Stop)
	return s
}

func (s *Server) start(bin string) {
	s.t.Helper()
	log, err := os.Create(filepath.Join(s.dir, "redis.log"))
	if err != nil {
		s.t.Fatal(err)
	}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1", "--dir", s.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no")
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	c := s.Client()
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := c.Ping(context.Background()).Err(); err == nil {
			return
		} else if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			s.t.Fatalf("redis-server did not answer on %s: %v\n%s", s.Addr, err, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop stops the server (a no-op when it is stopped).
func (s *Server) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// Restart starts the stopped server again on its port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	if s.cmd != nil {
		s.t.Fatal("redisserver: Restart of a running server")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.t.Fatal(err)
	}
	s.start(bin)
}

// Client returns a client of the server; close it after use.
func (s *Server) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: s.Addr, DisableIdentity: true})
}

// Do runs one command on the server, failing the test on an error.
func (s *Server) Do(args ...any) any {
	s.t.Helper()
	c := s.Client()
	defer c.Close()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil {
		s.t.Fatalf("redis %v: %v", args, fmt.Sprint(err))
	}
	return v
}
