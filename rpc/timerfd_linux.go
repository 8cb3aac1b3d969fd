package rpc

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerfd is a Linux timerfd (CLOCK_MONOTONIC, non-blocking) read through
// the network poller: a goroutine waiting for it parks like one waiting
// for a socket, and no runtime timer is pending meanwhile. The beat's
// clock (beat_linux.go) and the watchdog's timer (wdclock_linux.go) are
// made of one.
type timerfd struct {
	f   *os.File
	rc  syscall.RawConn
	buf [8]byte // the expiry count a read returns
	// set's system call: settime, made once, reads spec and writes errno.
	// (A closure made per set would be allocated: what it captures
	// escapes through RawConn.Control. The watchdog re-arms its timer
	// every tick, up to every 1 ms.) set is not called concurrently on one timerfd: the
	// beat sets its clock under its mutex, a watchdog from its goroutine.
	settime func(fd uintptr)
	spec    itimerspec
	errno   syscall.Errno
}

// itimerspec is the kernel's struct itimerspec.
type itimerspec struct {
	interval, value syscall.Timespec
}

// newTimerfd returns a disarmed timerfd, or nil when one cannot be made
// (a sandbox that forbids the system call, a poller that refuses the fd).
func newTimerfd(name string) *timerfd {
	const clockMonotonic = 1
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return nil
	}
	// A non-blocking descriptor given to os.NewFile is read through the
	// poller.
	f := os.NewFile(fd, name)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	t := &timerfd{f: f, rc: rc}
	t.settime = func(fd uintptr) {
		_, _, t.errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&t.spec)), 0, 0, 0)
	}
	if !t.set(0, 0) || f.SetReadDeadline(time.Time{}) != nil {
		// SetReadDeadline fails on a file the poller does not watch: a
		// read would block the thread.
		f.Close()
		return nil
	}
	return t
}

// set arms the timer to expire first after first, then every interval
// (0: once); first <= 0 disarms it.
func (t *timerfd) set(first, interval time.Duration) bool {
	t.spec = itimerspec{}
	if first > 0 {
		t.spec.value = syscall.NsecToTimespec(int64(first))
		t.spec.interval = syscall.NsecToTimespec(int64(interval))
	}
	t.errno = 0
	err := t.rc.Control(t.settime)
	return err == nil && t.errno == 0
}

// read waits for the next expiry; false when the read failed.
func (t *timerfd) read() bool {
	_, err := t.f.Read(t.buf[:])
	return err == nil
}
