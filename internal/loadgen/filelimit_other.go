//go:build !unix

package loadgen

// processFileLimit is unknown here: no check is made.
func processFileLimit() (uint64, bool) { return 0, false }

// outOfFiles is never sure here.
func outOfFiles(error) (process, system bool) { return false, false }
