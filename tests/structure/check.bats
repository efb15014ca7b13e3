#!/usr/bin/env bats
# tests/structure/check: each of the layout's rules fails on a small tree
# of its own that breaks it (two folders of core/ built here into
# objects), and a tree that keeps them passes. That this tree keeps them
# is `make structure`'s check, one of make lint's (make test runs it).

bats_load_library bats-support
bats_load_library bats-assert

CHECK=$BATS_TEST_DIRNAME/check

setup() {
	T=$(mktemp -d)
	mkdir -p "$T/core/x" "$T/core/y" "$T/build/obj/core/x" "$T/build/obj/core/y"
}

teardown() {
	rm -rf "$T"
}

# src FILE TEXT: a source of the small tree.
src() { printf '%s\n' "$2" >"$T/$1"; }

# objects: build every source of the small tree; prints the objects.
objects() {
	local c o
	for c in "$T"/core/*/*.c; do
		o=$T/build/obj/${c#"$T"/}
		o=${o%.c}.o
		cc -c -I"$T/core" -I"$T" -o "$o" "$c" || return 1
		echo "$o"
	done
}

@test "two files that use each other are a circle" {
	src core/x/a.c 'int b(void); int a(void) { return b(); }'
	src core/x/b.c 'int a(void); int b(void) { return a() + 1; }'
	src core/x/README 'Uses: nothing'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial 'files use each other in a circle: core/x/a.c core/x/b.c'
}

@test "a circle through three files is found too" {
	src core/x/a.c 'int b(void); int a(void) { return b(); }'
	src core/x/b.c 'int c(void); int b(void) { return c(); }'
	src core/x/c.c 'int a(void); int c(void) { return a(); }'
	src core/x/README 'Uses: nothing'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial 'circle: core/x/a.c core/x/b.c core/x/c.c'
}

@test "a folder that uses one its README does not name, or names one it does not use" {
	src core/x/a.c 'int b(void); int a(void) { return b(); }'
	src core/y/b.c 'int b(void) { return 1; }'
	src core/x/README 'Uses: nothing'
	src core/y/README 'Uses: x'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial 'core/x uses core/y, which its README does not name (core/x/a.c -> core/y/b.c)'
	assert_output --partial 'core/y/README names core/x, which it does not use'
}

@test "a use in brackets may go unused (a part the build leaves out), but must be named when used" {
	src core/x/a.c 'int a(void) { return 1; }'
	src core/y/b.c 'int b(void) { return 1; }'
	src core/x/README 'Uses: [y]'
	src core/y/README 'Uses: nothing'
	run "$CHECK" --root "$T" $(objects)
	assert_success
	src core/x/a.c 'int b(void); int a(void) { return b(); }'
	src core/x/README 'Uses: nothing'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial 'core/x uses core/y, which its README does not name'
	src core/x/README 'Uses: [y]'
	run "$CHECK" --root "$T" $(objects)
	assert_success
}

@test "a folder without a Uses line" {
	src core/x/a.c 'int a(void) { return 1; }'
	src core/x/README 'What x is.'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial 'core/x/README: no "Uses:" line'
}

@test "libhvd's sources include nothing of the launcher" {
	mkdir -p "$T/lib/job"
	src lib/job/hosts.h '/* hosts */'
	src core/x/a.c '#include "lib/job/hosts.h"
int a(void) { return 1; }'
	src core/x/README 'Uses: nothing'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial "core/x/a.c: includes \"lib/job/hosts.h\" (lib/job/hosts.h), against the layout's direction"
	src core/x/a.c '#include "../../lib/job/hosts.h"
int a(void) { return 1; }'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial "core/x/a.c: includes \"../../lib/job/hosts.h\" (lib/job/hosts.h)"
}

@test "a tree that keeps the rules passes, and --folders prints the uses" {
	src core/x/a.c 'int b(void); int a(void) { return b(); }'
	src core/y/b.c 'int b(void) { return 1; }'
	src core/x/README 'Uses: y'
	src core/y/README 'Uses: nothing'
	objs=$(objects)
	run "$CHECK" --root "$T" $objs
	assert_success
	assert_output 'structure: 2 files, 0 in circles; 0 breaches'
	run "$CHECK" --folders --root "$T" $objs
	assert_success
	assert_line 'core/x: core/y'
	assert_line 'core/y: nothing'
}

@test "bad usage is exit 2" {
	run "$CHECK"
	assert_failure 2
	run "$CHECK" --root
	assert_failure 2
	run "$CHECK" not-an-object.c
	assert_failure 2
}

@test "two folders that use each other are a circle, though no two files are" {
	src core/x/a.c 'int c(void); int a(void) { return c(); }'
	src core/x/b.c 'int b(void) { return 2; }'
	src core/y/c.c 'int c(void) { return 3; }'
	src core/y/d.c 'int b(void); int d(void) { return b(); }'
	src core/x/README 'Uses: y'
	src core/y/README 'Uses: x'
	run "$CHECK" --root "$T" $(objects)
	assert_failure 1
	assert_output --partial 'libhvd: folders use each other in a circle: core/x core/y (core/x/a.c -> core/y/c.c, core/y/d.c -> core/x/b.c'
	assert_output --partial ' 0 in circles; 1 breaches'
}
