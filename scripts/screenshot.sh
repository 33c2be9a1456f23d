#!/usr/bin/env bash
# The README's picture (docs/img/run.png): the default scene recorded to a glTF file, played by
# `timewarp view` in headless Chromium, and photographed at one simulated time.
#
# Usage: scripts/screenshot.sh [OUT.png] [SECONDS_INTO_THE_RUN]
# Needs chromium (Debian: apt-get install chromium) and a release build (cargo build --release).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-docs/img/run.png}
at=${2:-1.6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
target/release/timewarp run cylinders --out "$work/run.glb" --quiet
target/release/timewarp view "$work/run.glb" --quiet
mkdir -p "$(dirname "$out")"
chromium --headless --no-sandbox --enable-unsafe-swiftshader --use-angle=swiftshader \
    --hide-scrollbars --force-device-scale-factor=1 --user-data-dir="$work/profile" \
    --window-size=960,540 --virtual-time-budget=10000 --screenshot="$(realpath -m "$out")" \
    "file://$work/run.html#t=$at&paused" 2>/dev/null
echo "wrote $out"
