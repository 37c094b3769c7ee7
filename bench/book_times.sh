#!/bin/bash
# `make book` from a fresh clone, idle and with two CPU-bound processes beside it, then
# `make test-quick` in the idle clone (issue 46). Usage: bench/book_times.sh [OUT] [PAUSE_PGID]
#   OUT         where the logs go (default /tmp/book-times)
#   PAUSE_PGID  a process group to stop (SIGSTOP) for the measurement and resume after, so that
#               "idle" means idle while a long background job waits.
# Clones into /tmp/book-idle and /tmp/book-loaded; ../shared beside them is linked to this checkout's.
set -u
REPO=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-/tmp/book-times}; PG=${2:-}
mkdir -p "$OUT"; log="$OUT/log.txt"
[ -n "$PG" ] && kill -STOP -- "-$PG" && sleep 5
[ -d "$REPO/../shared" ] && ln -sfn "$(cd "$REPO/../shared" && pwd)" /tmp/shared
head=$(git -C "$REPO" rev-parse --short HEAD)
stamp() { date -u +%FT%TZ; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
for mode in idle loaded; do
  rm -rf "/tmp/book-$mode"; git clone -q "$REPO" "/tmp/book-$mode"
  pids=""
  if [ "$mode" = loaded ]; then
    for _ in 1 2; do python3 -c "while True: pass" & pids="$pids $!"; done
  fi
  echo "$(stamp) $mode start head=$head load=$(load)" >> "$log"
  s=$(date +%s.%N)
  (cd "/tmp/book-$mode" && env -u OMP_NUM_THREADS make book) > "$OUT/book-$mode.log" 2>&1; rc=$?
  e=$(date +%s.%N)
  [ -n "$pids" ] && kill $pids
  echo "$(stamp) $mode make book rc=$rc wall=$(python3 -c "print(round($e - $s, 1))") s load=$(load)" >> "$log"
done
s=$(date +%s.%N)
(cd /tmp/book-idle && env -u OMP_NUM_THREADS make test-quick) > "$OUT/test-quick.log" 2>&1; rc=$?
e=$(date +%s.%N)
echo "$(stamp) idle make test-quick rc=$rc wall=$(python3 -c "print(round($e - $s, 1))") s $(tail -1 "$OUT/test-quick.log")" >> "$log"
[ -n "$PG" ] && kill -CONT -- "-$PG" && echo "$(stamp) resumed process group $PG" >> "$log"
cat "$log"
