#!/bin/sh
# cgcount.sh counts the instructions a call of an rpc benchmark executes,
# with valgrind's callgrind (this repository's machines have no hardware
# counters for perf stat), as the difference of a 300,000-call and a
# 100,000-call run, so that setup cancels out. It prints the total per
# call, its share by group (runtime, rpc, rpc/wire, frame, the
# benchmark's harness) and the exclusive instructions per call of each
# zapcodec function. Callgrind runs one thread at a time: the runtime's
# share moves by about 50 instructions a call between runs, the code
# under test's by about 1. Needs valgrind and python3; about 2 minutes.
#
#   go test -c -o /tmp/rpc.test ./rpc
#   internal/rounds/cgcount.sh /tmp/rpc.test /tmp/cg [Unary|FloorMux|FloorMuxEnv]
#
# (GODEBUG=asyncpreemptoff=1: callgrind's signal handling asserts on Go's
# preemption signal; cpu.rdtscp=off: valgrind 3.19 stops the process with
# SIGILL at the runtime's RDTSCP on this machine's CPU since session 30.)
set -e
T=$1; D=$2; B=${3:-Unary}
mkdir -p $D
for n in 100000 300000; do
  GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --callgrind-out-file=$D/cg.$B.$n $T -test.run '^$' -test.bench "Benchmark$B\$/size=64/callers=256\$" -test.benchtime ${n}x > $D/cg.$B.$n.log 2>&1
  callgrind_annotate --auto=no --tree=none --threshold=100 $D/cg.$B.$n 2>/dev/null | awk '/file:function/{p=1;next} p && $1 ~ /^[0-9,]+$/ {n=$1; gsub(",","",n); fn=$0; sub(/^[ 0-9,]+\([ 0-9.%]+\) +/,"",fn); sub(/ \[.*\]$/,"",fn); sub(/^[^:]*:/,"",fn); print n "\t" fn}' > $D/cg.$B.$n.fn
done
python3 - "$D" "$B" <<'PY'
import sys, collections
D, B = sys.argv[1], sys.argv[2]
d = {}
for n in (100000, 300000):
    m = collections.Counter()
    for line in open(f"{D}/cg.{B}.{n}.fn"):
        c, fn = line.rstrip("\n").split("\t", 1)
        m[fn] += int(c)
    d[n] = m
u = collections.Counter({fn: (d[300000][fn] - d[100000][fn]) / 200000 for fn in set(d[100000]) | set(d[300000])})
def grp(fn):
    if fn.startswith("github.com/zapcodec/zapcodec/rpc.bench") or "muxConn" in fn or "rpc.raw" in fn or "rpc.echo" in fn: return "bench/floor code"
    if fn.startswith("github.com/zapcodec/zapcodec/rpc/wire"): return "rpc/wire"
    if fn.startswith("github.com/zapcodec/zapcodec/rpc"): return "rpc"
    if "zapcodec/frame" in fn: return "frame"
    if "bufio" in fn or fn.startswith("io."): return "bufio/io"
    if fn.startswith("runtime.") or "internal/runtime" in fn: return "runtime"
    if "syscall" in fn or "internal/poll" in fn or fn.startswith("net.") or fn.startswith("os."): return "syscall/net"
    if "slices." in fn or fn.startswith("time."): return "bench harness"
    return "other"
g = collections.Counter()
for fn, v in u.items(): g[grp(fn)] += v
print(f"{B}: {sum(u.values()):.0f} instructions per call;", ", ".join(f"{k} {v:.0f}" for k, v in g.most_common() if abs(v) >= 3))
for fn, v in u.most_common(70):
    if grp(fn) in ("rpc", "rpc/wire", "frame") and v >= 2:
        print(f"{v:8.1f} {fn}")
PY
