# final measurement run: 2 GPUs in parallel (GPU0 product path; GPU1 small GPU, decoder bench, engine check)
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl 2>&1 | tail -2
unset PYTHONDONTWRITEBYTECODE   # a pip install writes bytecode; the image's setting would recompile everything per process
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 PYTHONPYCACHEPREFIX=/tmp/pyc NCCL_NVLS_ENABLE=0
python3 -c "import ocr_app.cli, torch, transformers, torchvision" 2>/dev/null  # fill the bytecode cache once
git log --oneline -1 2>/dev/null; nvidia-smi --query-gpu=name --format=csv,noheader
( CUDA_VISIBLE_DEVICES=0 timeout 560 python3 bench/bench_product.py --work /tmp/bp --pages 1,16,64 --soak 100 --timeout 300 --out $OUT/product.json > $OUT/product.log 2>&1; echo "product rc=$?" ) &
( export CUDA_VISIBLE_DEVICES=1
  timeout 250 python3 bench/bench_small_gpu.py --budgets 4 --work /tmp/sg --out $OUT/small.json > $OUT/small.log 2>&1; echo "small rc=$?"
  OUT=$OUT timeout 120 python3 bench/bench_decode.py --pages 16 --new 512 --presets bf16 --gen-pages "" --check 0 --profile "" --torch-pages "" > $OUT/decode.log 2>&1; echo "decode rc=$?"
  timeout 180 python3 bench/gpu_engine_check.py --presets bf16,fp16,mixed,int8 --out $OUT/check.json > $OUT/check.log 2>&1; echo "check rc=$?"
) &
wait
for f in $OUT/*.log; do echo "== $f"; grep -v "Loading weights\|Writing model\|it/s\]" $f | tail -40; done 2>&1 | tail -150
gzip -f $OUT/*.log
