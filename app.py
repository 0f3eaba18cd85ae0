"""Start the ocr-app web UI: ``python app.py [--host H] [--port P] [--share] [--model M] ...``.

See ``python app.py --help``; the same app starts with ``ocr-app ui``.
"""

import sys

from ocr_app.ui.main import main

if __name__ == "__main__":
    sys.exit(main())
