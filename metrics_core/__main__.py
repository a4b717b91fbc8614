"""``python -m metrics_core`` runs the command line."""

import sys

from metrics_core.cli import main

sys.exit(main())
