"""``python -m conformance.analysis JOB INPUT...``, or this file given to ``spark-submit``."""

import sys

from conformance.analysis.cli import main

if __name__ == "__main__":
    sys.exit(main())
