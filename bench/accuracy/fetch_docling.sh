#!/usr/bin/env bash
# Fetch docling's public test PDFs and Markdown ground truth for `python -m bench.accuracy.peers`.
#
# Source: https://github.com/docling-project/docling (MIT licence, © IBM and docling contributors).
# The files are NOT committed to ocr-app: they are test data of another project; the benchmark reads
# them from the folder given here. Pinned to one commit so the figures in docs/ACCURACY.md can be
# reproduced; only tests/data/pdf and tests/data/ocr are checked out (sparse, blobs on demand).
#
# Usage: bench/accuracy/fetch_docling.sh [DIR]   (default: ./docling-data)
set -euo pipefail
DIR="${1:-docling-data}"
COMMIT="e1cb2b234c48ff29746b0f2f843d07f8e23905a0"   # docling main, 2026-08-21
URL="https://github.com/docling-project/docling.git"

mkdir -p "$DIR"
cd "$DIR"
if [ ! -d .git ]; then
  git init -q
  git remote add origin "$URL"
fi
git sparse-checkout set --no-cone /tests/data/pdf/ /tests/data/ocr/sources/ /tests/data/ocr/groundtruth/rapidocr/
git fetch -q --depth 1 --filter=blob:none origin "$COMMIT"
git checkout -q FETCH_HEAD
echo "docling test data at $(pwd) (commit $COMMIT)"
echo "run: python -m bench.accuracy.peers --data $(pwd)"
