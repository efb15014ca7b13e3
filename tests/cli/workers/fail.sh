#!/bin/sh
# Rank $1 exits with code $2 (or kills itself with signal -N); the others
# wait, recording their pids. $3 = "ignore-term": the others ignore SIGTERM.
echo $$ >"$PIDDIR/rank$HOROVOD_RANK"
if [ "$HOROVOD_RANK" = "$1" ]; then
	sleep 0.3
	case $2 in
	-*) kill ${2} $$ ;;
	*) exit "$2" ;;
	esac
fi
[ "${3-}" = ignore-term ] && trap '' TERM
i=0
while [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
