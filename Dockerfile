# ocr-app web UI on a CUDA GPU.  Not built in CI (no Docker there): kept minimal, every line explained.
#
#   docker build -t ocr-app .
#   docker run --gpus all -p 7860:7860 -v ~/.cache/huggingface:/home/app/.cache/huggingface ocr-app
#
# Weights: mount a Hugging Face cache that already holds deepseek-community/DeepSeek-OCR-2, or mount a
# checkpoint folder and pass `-e DEEPSEEK_OCR_MODEL=/models/DeepSeek-OCR-2`. Without weights (or without
# a GPU) the app still starts and reads pages with the light CPU engine; the UI says what is missing.
# Any setting can be given as DEEPSEEK_OCR_<NAME> (see docs/RUNTIME.md), e.g. -e DEEPSEEK_OCR_IDLE_UNLOAD_S=600.

# CUDA runtime base: the torch wheels bring their own CUDA libraries; the base image supplies a matching
# userland for the NVIDIA container runtime. Keep CUDA_IMAGE and TORCH_INDEX_URL on the same CUDA version.
ARG CUDA_IMAGE=nvidia/cuda:12.8.1-runtime-ubuntu24.04
FROM ${CUDA_IMAGE}

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH

# Python 3.12 from Ubuntu; libgl1 + libglib2.0-0 are what OpenCV (used by rapidocr) loads at import.
# (apt versions follow the base image's release: pinning them would break with every base update.)
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv libgl1 libglib2.0-0 \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv "$VIRTUAL_ENV" \
 && useradd --create-home --uid 10001 app

# Layers from the least to the most often changed, so a code edit re-runs only the last few:
# 1. torch, from the index that matches the base image's CUDA (the version CI tests, constraints.txt's pair).
RUN pip install "torch==2.14.1" "torchvision==0.29.1" --index-url "$TORCH_INDEX_URL"
WORKDIR /app
# 2. every other dependency, at the exact versions CI passed with (constraints.txt), resolved from the
#    project metadata alone: an empty stand-in package takes the code's place, so this layer stays cached
#    until pyproject.toml or constraints.txt change. constraints.txt is written by `.ci/lock` (uv pip compile
#    --universal): one file for CI's Python 3.11 and this image's 3.12, a marker-picked line where they differ.
COPY pyproject.toml constraints.txt README.md ./
RUN mkdir ocr_app && touch ocr_app/__init__.py \
 && pip install -c constraints.txt ".[all,gpu]" \
 && pip uninstall -y ocr-app && rm -rf ocr_app build
# 3. the code itself (its dependencies are in place: nothing is resolved again).
COPY ocr_app ./ocr_app
COPY app.py ./
RUN pip install --no-deps .

# Run as the unprivileged user made above (uid 10001: Ubuntu 24.04 images already use 1000 for "ubuntu");
# its home holds the model and result caches (mount volumes there).
USER 10001
ENV HF_HOME=/home/app/.cache/huggingface \
    DEEPSEEK_OCR_HOST=0.0.0.0 \
    DEEPSEEK_OCR_PORT=7860 \
    GRADIO_ANALYTICS_ENABLED=False

EXPOSE 7860
# Healthy = the web app answers "/" on its port (python -m ocr_app.ui.health: no curl in the image). The
# start period covers startup only: the model loads on the first page, not before serving.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 CMD ["python", "-m", "ocr_app.ui.health"]
CMD ["python", "app.py"]
