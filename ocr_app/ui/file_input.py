"""File inputs that leave nothing behind: ``gr.File`` without its unused temp file per file.

Why: Gradio 6's ``File`` (``type="filepath"``) makes a ``NamedTemporaryFile(delete=False)`` in its cache
folder for every file it passes to an event, then returns the uploaded file's own path and never uses
or removes the temp file: one zero-byte file per uploaded file until the app stopped (issue 31).
``without_temp_files`` gives one component the same checks and the same path, without the temp file.
Why on the instance, not a subclass: Gradio writes a ``.pyi`` stub beside any module that defines a
component class.
"""

from __future__ import annotations

import types
from typing import Any

from gradio import utils as gr_utils
from gradio.components import file as gr_file
from gradio.exceptions import Error


def _process_single_file(self: Any, f: Any) -> Any:
    if self.type != "filepath":
        return type(self)._process_single_file(self, f)
    if self.file_types and not gr_file.client_utils.is_valid_file(f.path, self.file_types):  # gradio's check
        raise Error(
            f"Invalid file type. Please upload a file that is one of these formats: {self.file_types}"
        )
    return gr_utils.NamedString(f.path)


def without_temp_files(component: Any) -> Any:
    """``component`` (a ``gr.File``), passing files to events without the stray temp file."""
    component._process_single_file = types.MethodType(_process_single_file, component)
    return component


__all__ = ["without_temp_files"]
