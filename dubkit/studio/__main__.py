"""``python -m dubkit.studio``: the same as ``dubkit studio``."""

import sys

from .command import main

sys.exit(main())
