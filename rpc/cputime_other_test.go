//go:build !unix

package rpc

// cpuTime is 0 where the process's CPU time is not read (BenchmarkIdleCPU
// runs on Linux only).
func cpuTime() int64 { return 0 }
