"""``python -m metrics_core`` runs the command line."""

import sys

from metrics_core.cli import main

if __name__ == "__main__":  # the Dask engine's worker processes import this module
    sys.exit(main())
