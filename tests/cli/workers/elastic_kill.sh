#!/bin/sh
# An elastic job's worker (or a rank): records its pid, then runs "$@" in its place.
# ELASTIC_KILL="ID:SECONDS ...": worker ID gets SIGKILL that many seconds
# after it starts (a host that dies), once: not again when it is started
# again on a host that is back.
# ELASTIC_AGAIN_FAIL="ID:SECONDS ...": worker ID, started again after that
# kill, exits 3 that many seconds later without joining (a host that
# returns broken), once: its next start runs "$@".
# A job that is not elastic: the rank.
id=${HVD_WORKER_ID-$HOROVOD_RANK}
echo $$ >"$PIDDIR/worker$id"
for k in ${ELASTIC_AGAIN_FAIL-}; do
	if [ "${k%%:*}" = "$id" ] && [ -d "$PIDDIR/killed$id" ] &&
		mkdir "$PIDDIR/failed$id" 2>/dev/null; then
		sleep "${k#*:}"
		exit 3
	fi
done
for k in ${ELASTIC_KILL-}; do
	if [ "${k%%:*}" = "$id" ] && mkdir "$PIDDIR/killed$id" 2>/dev/null; then
		(sleep "${k#*:}"; kill -KILL $$) &
	fi
done
exec "$@"
