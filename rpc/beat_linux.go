package rpc

import (
	"io"
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerClock is the beat's clock on Linux: a timerfd, read through the
// network poller. While the beat waits for it no runtime timer is
// pending.
type timerClock struct {
	f   *os.File
	buf [8]byte // the expiry count a read returns
}

// newBeatClock returns a timerfd clock, or a ticker when the kernel
// refuses a timerfd.
func newBeatClock() beatClock {
	const clockMonotonic = 1
	fd, _, errno := syscall.Syscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return newTickerClock()
	}
	c := &timerClock{f: os.NewFile(fd, "rpc-beat")}
	if c.settime(0) != nil {
		c.f.Close()
		return newTickerClock()
	}
	return c
}

func (c *timerClock) set(d time.Duration) {
	// It worked at creation, with the same descriptor and arguments of
	// the same form: it does not fail now.
	c.settime(d)
}

// settime arms the timer to expire every d from now (0: disarms it).
func (c *timerClock) settime(d time.Duration) error {
	ts := syscall.NsecToTimespec(int64(d))
	spec := [2]syscall.Timespec{ts, ts} // struct itimerspec: interval, first expiry
	rc, err := c.f.SyscallConn()
	if err != nil {
		return err
	}
	var errno syscall.Errno
	if err := rc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	}); err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

func (c *timerClock) wait() {
	if _, err := io.ReadFull(c.f, c.buf[:]); err != nil {
		time.Sleep(beatMin) // not expected from a timerfd; do not spin
	}
}
