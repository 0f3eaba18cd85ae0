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
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv libgl1 libglib2.0-0 \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv "$VIRTUAL_ENV"

# torch first, from the index that matches the base image's CUDA; then the package with every extra
# (model, light, ui). Copying only what the install needs keeps this layer cached across code edits.
RUN pip install "torch>=2.6,<2.15" "torchvision>=0.21,<0.30" --index-url "$TORCH_INDEX_URL"
WORKDIR /app
COPY pyproject.toml README.md ./
COPY ocr_app ./ocr_app
RUN pip install ".[all]"
COPY app.py ./

# Run as an unprivileged user; its home holds the model and result caches (mount volumes there).
# (Ubuntu 24.04 images already use uid 1000 for "ubuntu", so the uid is left to useradd.)
RUN useradd --create-home app
USER app
ENV HF_HOME=/home/app/.cache/huggingface \
    DEEPSEEK_OCR_HOST=0.0.0.0 \
    DEEPSEEK_OCR_PORT=7860 \
    GRADIO_ANALYTICS_ENABLED=False

EXPOSE 7860
CMD ["python", "app.py"]
