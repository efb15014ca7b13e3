#!/bin/sh
# A worker with a child, and a grandchild that leaves the process group
# and the session; all record their pids, the worker last. Waits, exits
# at once ($1 = exit), or ignores SIGTERM ($1 = ignore-term).
sleep 60 &
echo $! >"$PIDDIR/child$HOROVOD_RANK"
setsid sh -c 'echo $$ >"$PIDDIR/setsid$HOROVOD_RANK"; exec sleep 60' </dev/null >/dev/null 2>&1 &
# Go on only once the whole family is up.
i=0
while [ ! -s "$PIDDIR/setsid$HOROVOD_RANK" ] && [ $i -lt 100 ]; do
	sleep 0.02; i=$((i + 1))
done
if [ "${1-}" = ignore-term ]; then
	trap '' TERM
else
	trap 'echo "rank $HOROVOD_RANK got TERM"; exit 143' TERM
fi
trap 'echo "rank $HOROVOD_RANK got HUP"; exit 129' HUP
# Last: the rank's own pid file says the whole family is up, traps set.
echo $$ >"$PIDDIR/rank$HOROVOD_RANK"
case ${1-wait} in
exit) exit 0 ;;
esac
i=0
while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
