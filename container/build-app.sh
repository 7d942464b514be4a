#!/bin/sh
# Compiles the evaluation container's code and lays out /app as the image holds it. Run
# from the build context's root by the Dockerfile (node-build stage) and, on the build
# context `cdk synth` stages, by test/infra/container-build-context.test.ts, so that what
# the test compiles is what the image compiles.
set -eu
# The runtime stage copies both folders; they must exist even if a context lacks them.
mkdir -p resources examples
# container/tsconfig.json compiles entry.ts and what it imports (core/, adapters/) only.
npx tsc -p container/tsconfig.json
# tsc emits no .py files; the executor looks for its driver and warm server beside the
# compiled code (dist/adapters/local/python), so they are put there.
mkdir -p dist/adapters/local/python
cp adapters/local/python/*.py dist/adapters/local/python/
test -f dist/container/entry.js
