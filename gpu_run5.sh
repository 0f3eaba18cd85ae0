python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
unset PYTHONDONTWRITEBYTECODE
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX=/tmp/pyc
W=/tmp/bp
timeout 420 python3 bench/profile_product.py --work $W --pages 16,64 --variants bf16,mixed --sample --vision --out $OUT/prof.json > $OUT/prof.log 2>&1
grep -v "Loading weights\|Writing model" $OUT/prof.log | grep -i "error\|Trace\|kept" | head
for i in 1 2; do
/usr/bin/time -f "wall %e" env DEEPSEEK_OCR_DECODER=graph python3 -m ocr_app.cli convert $W/doc1.pdf -o $W/cold --model $W/full --device cuda --dtype bf16 --engine deepseek --mode default --max-new-tokens 32 --no-cache -q -v 2>&1 | grep "cold start\|wall\|rror"
done
