#!/bin/bash
# sessions.sh: the many-sessions figures of the README. For each
# connection count, rounds of `zapcodec load -c N -concurrency 1 -rate R
# -d D` against a fresh `ethrpc -serve` (rpc.Server) and a fresh
# `ethrpc -serve -plain` (a plain goroutine-per-connection server answering
# the same bytes), interleaved; per run: p50/p99/p99.9 (ms), the server's
# CPU seconds while the load ran (from "connections open" to the report),
# and its resident set per connection (RSS late in the run minus RSS
# before any connection, divided by N), and the load tool's own CPU
# seconds over its whole run (dialing included; needs /usr/bin/time). At
# the end, per N, the medians of each server's CPU, p99 and RSS per
# connection, and their ratios to the plain server's.
#
#   examples/ethrpc/sessions.sh [ROUNDS] [N...]     (default: 3 rounds, 10000)
#
# Needs Linux (/proc); builds both tools into a temporary directory.
# BASE_ETHRPC=/path/to/ethrpc adds a third server to each round ("base",
# an older build of ethrpc, run with -serve) for before/after figures.
#
# PINGPONG=R replaces the open-loop load with examples/ethrpc/pingpong:
# after a first round, R rounds of one call at a time on each of the N
# connections, and the server's CPU per call (ns resolution) in each; the
# figure is the median of a run's rounds. A server answering calls one by
# one wakes for each and goes idle after it, as on a quiet machine at this
# rate, but the figure hardly moves with the machine's load (the
# open-loop one does: a busy machine batches the calls).
set -euo pipefail
ROUNDS=${1:-3}; shift || true
NS=${*:-10000}
RATE=${RATE:-15000}
DUR=${DUR:-8s}
here=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(mktemp -d)
spid= lpid=
trap 'kill $spid $lpid 2>/dev/null || true; rm -rf "$bin"' EXIT
(cd "$here" && go build -o "$bin/zapcodec" ./cmd/zapcodec && go build -o "$bin/ethrpc" ./examples/ethrpc &&
  go build -o "$bin/pingpong" ./examples/ethrpc/pingpong)
payload=5a41500001000000100000004a0000000000000000000000000000000000000000000001c0ea2101000000000100000000000000080000000e0000006574685f67657442616c616e6365
tick=$(getconf CLK_TCK)
cpu() { awk -v t="$tick" '{printf "%.3f", ($14+$15)/t}' "/proc/$1/stat"; }
rss() { awk '/VmRSS/ {print $2*1024}' "/proc/$1/status"; }
port=$((17700 + RANDOM % 700 * 20)) # below the ephemeral ports the clients use
if [ -n "${PINGPONG:-}" ]; then
  echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); pingpong: one call at a time, $PINGPONG rounds after the first"
else
  echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); rate $RATE/s, $DUR, concurrency 1"
fi
[ -z "${PINGPONG:-}" ] && printf "%-6s %-6s %6s %9s %9s %9s %9s %8s %10s %10s\n" N server calls/s p50-ms p99-ms p99.9-ms failed cpu-s rss-B/conn load-cpu-s
for n in $NS; do
  for r in $(seq "$ROUNDS"); do
    for kind in ${BASE_ETHRPC:+base} rpc plain; do
      port=$((port + 1))
      flags=(-serve -addr 127.0.0.1:$port)
      [ $kind = plain ] && flags+=(-plain)
      rm -f "$bin/srv.out" "$bin/load.json" "$bin/load.err" "$bin/load.time"
      srv=$bin/ethrpc
      [ $kind = base ] && srv=$BASE_ETHRPC
      "$srv" "${flags[@]}" > "$bin/srv.out" 2>&1 &
      spid=$!
      for _ in $(seq 100); do grep -q serving "$bin/srv.out" 2>/dev/null && break; sleep 0.1; done
      kill -0 $spid 2>/dev/null && grep -q serving "$bin/srv.out" || { echo "server did not start:"; cat "$bin/srv.out"; exit 1; }
      rss0=$(rss $spid)
      if [ -n "${PINGPONG:-}" ]; then
        "$bin/pingpong" -addr 127.0.0.1:$port -pid $spid -c "$n" -rounds "$PINGPONG" -method 1 -payload-hex $payload > "$bin/pp.out" || exit 1
        kill $spid; wait $spid 2>/dev/null || true
        first=$(awk '/^first/ {print $2}' "$bin/pp.out")
        mid=$(awk '/^round/ {print $3}' "$bin/pp.out" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
        printf "%-6s %-6s first %7.2f µs/call, then median %7.2f µs/call (rounds: %s)\n" "$n" $kind "$first" "$mid" "$(awk '/^round/ {printf "%s ", $3}' "$bin/pp.out")"
        echo "$n $kind $mid $first 0" >> "$bin/all.txt"
        continue
      fi
      /usr/bin/time -f "%U %S" -o "$bin/load.time" "$bin/zapcodec" load -addr 127.0.0.1:$port -c "$n" -concurrency 1 -rate "$RATE" -d "$DUR" -method 1 -json \
        -payload-hex $payload > "$bin/load.json" 2> "$bin/load.err" &
      lpid=$!
      until grep -q "connections open" "$bin/load.err" 2>/dev/null; do
        kill -0 $lpid 2>/dev/null || { cat "$bin/load.err"; exit 1; }
        sleep 0.05
      done
      cpu0=$(cpu $spid)
      sleep $(( ${DUR%s} - 1 ))
      rss1=$(rss $spid)
      until grep -q '^}' "$bin/load.json" 2>/dev/null; do
        kill -0 $lpid 2>/dev/null || break
        sleep 0.02
      done
      cpu1=$(cpu $spid)
      wait $lpid || true
      kill $spid; wait $spid 2>/dev/null || true
      j() { grep -o "\"$1\": *[0-9.e+]*" "$bin/load.json" | head -1 | sed 's/.*: *//'; }
      printf "%-6s %-6s %6.0f %9.2f %9.2f %9.2f %9s %8.2f %10.0f %10.2f\n" "$n" $kind "$(j calls_per_sec)" \
        "$(echo "$(j p50)/1000000" | bc -l)" "$(echo "$(j p99)/1000000" | bc -l)" "$(echo "$(j p99_9)/1000000" | bc -l)" \
        "$(j failed)" "$(echo "$cpu1-$cpu0" | bc -l)" "$(echo "($rss1-$rss0)/$n" | bc -l)" "$(awk '{print $1+$2}' "$bin/load.time")"
      echo "$n $kind $(echo "$cpu1-$cpu0" | bc -l) $(echo "$(j p99)/1000000" | bc -l) $(echo "($rss1-$rss0)/$n" | bc -l)" >> "$bin/all.txt"
      if [ "$(j failed)" != 0 ]; then
        echo "       failed calls: $(tr -d '\n ' < "$bin/load.json" | grep -o '"errors":{[^}]*}')"
      fi
    done
  done
done
# Medians per N and server, and ratios to plain's medians.
med() { sort -g | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
for n in $NS; do
  for kind in ${BASE_ETHRPC:+base} rpc plain; do
    c=$(awk -v n="$n" -v k=$kind '$1==n && $2==k {print $3}' "$bin/all.txt" | med)
    p=$(awk -v n="$n" -v k=$kind '$1==n && $2==k {print $4}' "$bin/all.txt" | med)
    m=$(awk -v n="$n" -v k=$kind '$1==n && $2==k {print $5}' "$bin/all.txt" | med)
    eval "c_$kind=$c p_$kind=$p m_$kind=$m"
  done
  for kind in ${BASE_ETHRPC:+base} rpc plain; do
    eval "c=\$c_$kind p=\$p_$kind m=\$m_$kind"
    if [ -n "${PINGPONG:-}" ]; then
      printf "# N=%s %-5s median of %s: %.2f µs/call (%.2fx plain), first call %.2f µs (%.2fx)\n" "$n" $kind "$ROUNDS" \
        "$c" "$(echo "$c/$c_plain" | bc -l)" "$p" "$(echo "$p/$p_plain" | bc -l)"
      continue
    fi
    printf "# N=%s %-5s median of %s: cpu %.2f s (%.2fx plain), p99 %.2f ms (%.2fx), rss %.0f B/conn (%.2fx)\n" "$n" $kind "$ROUNDS" \
      "$c" "$(echo "$c/$c_plain" | bc -l)" "$p" "$(echo "$p/$p_plain" | bc -l)" "$m" "$(echo "$m/$m_plain" | bc -l)"
  done
done
