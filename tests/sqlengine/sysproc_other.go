//go:build sqlengines && unix && !linux

package sqlengine

import "syscall"

// sysProcAttr runs a child as cred (nil: this user). Only Linux can have
// the child killed when this process dies; elsewhere Stop must run.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: cred}
}
