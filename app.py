"""Start the ocr-app web UI: ``python app.py [--host H] [--port P] [--share] [--model M] ...``.

The same command as ``ocr-app ui`` (one parser: the click definitions in ``ocr_app/cli.py``); see
``python app.py --help``.
"""

import sys

from ocr_app.cli import main

if __name__ == "__main__":
    sys.exit(main(["ui", *sys.argv[1:]], prog_name="app.py"))
