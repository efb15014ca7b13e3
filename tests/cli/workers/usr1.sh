#!/bin/sh
# Waits (10 s at most) for signal $1 (USR1 by default) after saying
# "ready", with a child that has no handler for it; then says whether
# the signal came and whether the child outlived it, and ends the child.
sig=${1:-USR1}
sleep 30 &
child=$!
echo "$child" >"$PIDDIR/child$HOROVOD_RANK"
got=no
trap 'got=yes' "$sig"
echo ready
i=0
while [ $got = no ] && [ $i -lt 100 ]; do
	sleep 0.1
	i=$((i + 1))
done
alive=dead
kill -0 "$child" 2>/dev/null && alive=alive
kill "$child"
echo "$sig $got, child $alive"
