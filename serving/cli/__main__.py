"""``python -m finrag.serving.cli``: the `finrag` command."""

import sys

from finrag.serving.cli import main

sys.exit(main())
