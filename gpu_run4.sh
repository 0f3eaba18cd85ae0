python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX=/tmp/pyc
W=/tmp/bp
timeout 400 python3 bench/profile_product.py --work $W --pages 16,64 --variants bf16 --vision --sample --env CUDA_DEVICE_MAX_CONNECTIONS=32 --out $OUT/prof.json > $OUT/prof.log 2>&1
grep -v "Loading weights\|Writing model" $OUT/prof.log | grep -i "error\|Trace" | head
