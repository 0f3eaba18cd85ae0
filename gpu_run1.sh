set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
python3 -c "import torchvision, transformers; print('tv', torchvision.__version__, transformers.__version__)"
nproc; lscpu | grep "Model name"
W=/tmp/bp
timeout 560 python3 bench/profile_product.py --work $W --pages 16,64 --variants bf16 --env DEEPSEEK_OCR_PREPROCESS_ON_GPU=false --out $OUT/prof.json > $OUT/prof.log 2>&1
tail -5 $OUT/prof.log
ls $W
env DEEPSEEK_OCR_DECODER=graph python3 -X importtime -m cProfile -o $OUT/cold.prof -m ocr_app.cli convert $W/doc1.pdf -o $W/cold --model $W/full --device cuda --dtype bf16 --engine deepseek --mode default --max-new-tokens 32 --no-cache -q -v 2> $OUT/cold_stderr.txt
grep "cold start" $OUT/cold_stderr.txt
grep "import time" $OUT/cold_stderr.txt | sort -t'|' -k2 -n -r | head -40 > $OUT/imports_top.txt
python3 -c "import pstats; pstats.Stats('$OUT/cold.prof').sort_stats('cumtime').print_stats(70)" > $OUT/cold_cum.txt
python3 -c "import pstats; pstats.Stats('$OUT/cold.prof').sort_stats('tottime').print_stats(40)" > $OUT/cold_tot.txt
gzip -f $OUT/cold_stderr.txt; rm -f $OUT/cold.prof
