#!/bin/sh
# The two type checks of `npm test` at once (each tsc is one thread; two cores run both in
# the time of the longer): the whole tree with jest's types (tsconfig.json), and the build's
# subset with node's types only (tsconfig.build.json: no source may lean on jest's globals).
# The second is the build itself: it writes dist/ and its stamp (scripts/build-stamp.ts), so
# the tests run the `rcb` command line a user runs, compiled once rather than by tsx at every
# start. Exits non-zero when either fails, after both have printed.
tsc -p tsconfig.json --noEmit &
whole=$!
tsc -p tsconfig.build.json && tsx scripts/build-stamp.ts
build=$?
wait "$whole"
whole=$?
[ "$whole" -eq 0 ] && [ "$build" -eq 0 ]
