python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX=/tmp/pyc
timeout 250 python3 bench/bench_product.py --work /tmp/bp --variants bf16 --cold-only --cold-runs 3 --pages 1 --out $OUT/cold.json 2>&1 | grep -v "Loading weights\|Writing model" | grep "cold start\|wall\|rror" | head
