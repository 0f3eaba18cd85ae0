python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX=/tmp/pyc
env | grep -i PYTHON
python3 -c "import sys; print('dont_write_bytecode', sys.flags.dont_write_bytecode)"
W=/tmp/bp
timeout 420 python3 bench/profile_product.py --work $W --pages 1,16,64 --variants bf16,mixed --out $OUT/prof.json > $OUT/prof.log 2>&1
grep -v "Loading weights\|Writing model" $OUT/prof.log | tail -3
for i in 1 2; do
/usr/bin/time -f "wall %e" env DEEPSEEK_OCR_DECODER=graph python3 -m ocr_app.cli convert $W/doc1.pdf -o $W/cold --model $W/full --device cuda --dtype bf16 --engine deepseek --mode default --max-new-tokens 32 --no-cache -q -v 2>&1 | grep "cold start\|wall"
done
python3 -X importtime -c "import ocr_app.cli, torch, transformers, torchvision" 2> $OUT/imp.txt; sort -t'|' -k2 -n -r $OUT/imp.txt | head -25 > $OUT/imports_top.txt; rm $OUT/imp.txt
