#!/bin/sh
# An elastic job's worker (or a rank): records its pid, then runs "$@" in its place.
# ELASTIC_KILL="ID:SECONDS ...": worker ID gets SIGKILL that many seconds
# after it starts (a host that dies).
# A job that is not elastic: the rank.
id=${HVD_WORKER_ID-$HOROVOD_RANK}
echo $$ >"$PIDDIR/worker$id"
for k in ${ELASTIC_KILL-}; do
	if [ "${k%%:*}" = "$id" ]; then
		(sleep "${k#*:}"; kill -KILL $$) &
	fi
done
exec "$@"
