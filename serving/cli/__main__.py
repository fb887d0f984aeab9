"""``python -m serving.cli``: the `finrag` command."""

import sys

from serving.cli import main

sys.exit(main())
