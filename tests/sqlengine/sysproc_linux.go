//go:build sqlengines && linux

package sqlengine

import "syscall"

// sysProcAttr runs a child as cred (nil: this user), killed when this
// process dies, so an engine never outlives a test binary that crashed.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
}
