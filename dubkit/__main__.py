"""``python -m dubkit``: the same command as ``dubkit`` (``python -m dubkit --help``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
