#!/usr/bin/env bats
# make install: the binary, the library, hvd.h, libhvd.pc and the man pages,
# usable as installed: a program built with pkg-config runs under the
# installed hvdrun.
bats_require_minimum_version 1.5.0
load helper

@test "make install DESTDIR=... PREFIX=... gives a usable hvdrun and libhvd" {
	plain_run_only
	local d=$BATS_TEST_TMPDIR/root pc
	run make -C "$ROOT" -s install DESTDIR="$d" PREFIX=/opt/hvd
	assert_success
	for f in bin/hvdrun include/hvd.h lib/libhvd.so lib/libhvd.so.0 lib/libhvd.a \
		lib/pkgconfig/libhvd.pc share/man/man1/hvdrun.1 share/man/man3/hvd.3 \
		share/man/man5/hvdrun.ini.5; do
		[ -e "$d/opt/hvd/$f" ] || { echo "missing $f"; return 1; }
	done
	pc=(env PKG_CONFIG_SYSROOT_DIR="$d" PKG_CONFIG_LIBDIR="$d/opt/hvd/lib/pkgconfig" pkg-config)
	run "${pc[@]}" --modversion libhvd
	assert_output --regexp '^[0-9]+\.[0-9]+\.[0-9]+$'
	cc $("${pc[@]}" --cflags libhvd) "$ROOT/examples/hello.c" -o "$BATS_TEST_TMPDIR/hello" \
		$("${pc[@]}" --libs libhvd) -Wl,-rpath,"$d/opt/hvd/lib"
	run "$d/opt/hvd/bin/hvdrun" -np 2 "$BATS_TEST_TMPDIR/hello"
	assert_success
	assert_line --regexp '^\[1\]<stdout>:rank 1 of 2 on localhost'
}

@test "hvd.h compiles alone, as C and as C++" {
	plain_run_only
	printf '#include <hvd.h>\nint main(void) { return hvd_size() > 0 ? 0 : 0; }\n' >"$BATS_TEST_TMPDIR/t.c"
	cc -std=c99 -Wall -Wextra -Werror -pedantic -I"$ROOT/core/include" -fsyntax-only "$BATS_TEST_TMPDIR/t.c"
	cp "$BATS_TEST_TMPDIR/t.c" "$BATS_TEST_TMPDIR/t.cc"
	c++ -Wall -Wextra -Werror -I"$ROOT/core/include" -fsyntax-only "$BATS_TEST_TMPDIR/t.cc"
}

@test "make install puts hvd.torch where python3 finds it, loading the installed libhvd" {
	plain_run_only
	local p=$BATS_TEST_TMPDIR/prefix site
	run make -C "$ROOT" -s install PREFIX="$p"
	assert_success
	site=$(ls -d "$p"/lib/python3*/dist-packages)
	[ -f "$site/hvd/torch/__init__.py" ] && [ -f "$site/hvd/_install.py" ]
	# From anywhere but the source tree: the installed copy and library.
	cd "$BATS_TEST_TMPDIR"
	run env PYTHONPATH="$site" /usr/bin/python3 -c 'import hvd._lib as l; print(l.lib._name)'
	assert_success
	assert_output "$p/lib/libhvd.so.0"
	if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
		run env PYTHONPATH="$site" "$p/bin/hvdrun" -np 2 /usr/bin/python3 -c \
			'import torch, hvd.torch as hvd; hvd.init(); print(hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist())'
		assert_success
		assert_line '[1]<stdout>:[2.0, 2.0]'
		# hvd.run finds the installed hvdrun.
		run env PYTHONPATH="$site" PATH=/usr/bin:/bin /usr/bin/python3 -c \
			'import hvd.runner as r; print(r._hvdrun())'
		assert_success
		assert_output "$p/bin/hvdrun"
	fi
	run make -C "$ROOT" -s uninstall PREFIX="$p"
	assert_success
	[ ! -e "$site/hvd" ]
}
