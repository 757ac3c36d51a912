"""``python -m conformance.cli``: the ``conformance`` command; also the driver script to hand to
``spark-submit`` (``spark-submit conformance/cli/__main__.py analyze ...``), hence the absolute import."""

import sys

from conformance.cli import main

if __name__ == "__main__":
    sys.exit(main())
