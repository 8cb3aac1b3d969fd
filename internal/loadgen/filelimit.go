package loadgen

import "fmt"

// fileLimit is processFileLimit; tests replace it.
var fileLimit = processFileLimit

// filesBesides is a generous count of the files a load run holds besides
// its connections: the standard files, the network poller's, a profile
// or histogram file being written.
const filesBesides = 16

// raiseLimitHint says how to raise the limit of open files; %d is the
// number of files wanted.
const raiseLimitHint = "raise it (ulimit -n %d in the shell that starts the run, which needs a hard limit, ulimit -Hn, at least that high: only root raises the hard limit, or LimitNOFILE= in a systemd unit, nofile in /etc/security/limits.conf) or ask for fewer connections"

// checkFileLimit refuses a run of conns connections that this process's
// limit of open files cannot hold: each dial past it would fail with
// "too many open files", which says neither the limit nor how to raise it.
// what names the connections ("100 connections").
func checkFileLimit(conns int, what string) error {
	limit, ok := fileLimit()
	if !ok {
		return nil
	}
	need := uint64(conns) + filesBesides
	if need <= limit {
		return nil
	}
	return fmt.Errorf("%s need about %d open files, above this process's limit of %d: "+raiseLimitHint,
		what, need, limit, need)
}

// explainOutOfFiles adds to a dial's error, when it is out of open files,
// the limit and how to raise it; conns is the number of connections the
// run asked for. Other errors are returned as they are.
func explainOutOfFiles(err error, conns int) error {
	process, system := outOfFiles(err)
	switch {
	case process:
		need := uint64(conns) + filesBesides
		limit, ok := fileLimit()
		if !ok {
			return fmt.Errorf("%w: out of open files (this process's limit): "+raiseLimitHint, err, need)
		}
		// The run's connections fit, other files took the rest: ask
		// for room for them all the same.
		need = max(need, limit+uint64(conns))
		return fmt.Errorf("%w: out of open files, this process's limit is %d: "+raiseLimitHint, err, limit, need)
	case system:
		return fmt.Errorf("%w: the system's table of open files is full (sysctl fs.file-max), not this process's limit", err)
	}
	return err
}
