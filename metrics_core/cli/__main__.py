"""``python -m metrics_core.cli``: the command line without the process settings of
:mod:`metrics_core.launcher` (``python -m metrics_core`` has them)."""

import sys

from metrics_core.cli import main

if __name__ == "__main__":
    sys.exit(main())
