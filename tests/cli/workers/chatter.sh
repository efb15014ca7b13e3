#!/bin/bash
# Write lines in small pieces, interleaved with the other ranks, on both
# streams; end with a line that has no newline.
for i in 1 2 3 4 5; do
	printf 'rank%s-' "$HOROVOD_RANK"
	sleep 0.01
	printf 'line%s-' "$i"
	sleep 0.01
	printf 'end\n'
	printf 'err%s\n' "$i" >&2
done
printf 'no newline at the end'
