"""The Gradio web app: a front end over ``ocr_app.convert.Converter``, peer of the CLI.

Why a package of small modules: the form (inputs → ``ConvertOptions``), the job runner (progress,
cancel), the result viewer and the GPU panel are plain functions that tests can call without a
browser; only ``blocks.OcrApp`` (built by ``app.build_app``) wires them into ``gr.Blocks``. Importing
this package does not import gradio.
"""
