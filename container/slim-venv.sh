#!/bin/sh
# Removes from a virtualenv (container/Dockerfile, python-pypi stage) what no paper's test
# loads, and prints what it saved:
#   - every package's own test suite (site-packages/**/tests/: pandas, scipy, jax, tensorflow
#     ... ship theirs; nothing imports them at run time);
#   - C/C++ headers (torch/include, nvidia/*/include, tensorflow/include): the tests compile
#     nothing, and mmcv's ops are built before the image (wheelhouse/built/);
#   - static archives (*.a) no dynamic loader reads;
#   - pip's and the installer's leftovers.
# npm run image:check -- --python-layer pypi then runs every paper's oracle in the result, so
# a removal that broke a paper would show there.
set -eu
venv=${1:?usage: slim-venv.sh VENV}
sp=$(echo "$venv"/lib/python3*/site-packages)
before=$(du -sk "$venv" | cut -f1)
find "$sp" -type d -name tests -prune -exec rm -rf {} +
rm -rf "$sp"/torch/include "$sp"/tensorflow/include
find "$sp"/nvidia -maxdepth 2 -type d -name include -prune -exec rm -rf {} + 2>/dev/null || true
find "$sp" -type f -name '*.a' -delete
rm -rf "$venv"/share/doc /root/.cache/pip "$venv".install.log
after=$(du -sk "$venv" | cut -f1)
echo "slim-venv: $venv $((before / 1024)) MB -> $((after / 1024)) MB"
