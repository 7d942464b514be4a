#!/bin/sh
# Builds the evaluation container's code and lays out /app as the image holds it. Run
# from the build context's root by the Dockerfile (node-build stage), by the emulator
# (emulator/container-app.ts, on the context `cdk synth` stages) and by
# test/infra/container-build-context.test.ts, so that what runs here is what the image runs.
set -eu
# The runtime stage copies both folders; they must exist even if a context lacks them.
mkdir -p resources examples
# One file, as the Lambdas are bundled (infra/rcb-function.ts): the image then holds no
# node_modules, and its code is exactly what entry.ts imports. No native addon is
# imported by the entry point (better-sqlite3 serves the local store only).
# --preserve-symlinks: where node_modules is a link (the emulator's build), the source map
# names the packages under this folder, as in the image's build stage, not where they live.
npx esbuild container/entry.ts --bundle --platform=node --target=node20 --format=cjs \
  --sourcemap --preserve-symlinks --log-level=warning --outfile=dist/container/entry.js
# The executor looks for its Python driver and warm server beside its own code, ../python
# from the module (adapters/executor/executor-options.ts bundledPythonFile); in the
# bundle that module's directory is dist/container.
mkdir -p dist/python
cp adapters/executor/python/*.py dist/python/
test -f dist/container/entry.js
