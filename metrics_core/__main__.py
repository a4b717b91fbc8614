"""``python -m metrics_core`` runs the command line, as the ``metrics-core`` script does."""

import sys

from metrics_core.launcher import main

if __name__ == "__main__":  # the Dask engine's worker processes import this module
    sys.exit(main())
