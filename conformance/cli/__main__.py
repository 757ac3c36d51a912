"""``python -m conformance.cli``: the ``conformance`` command; also the driver script to hand to
``spark-submit`` (``spark-submit conformance/cli/__main__.py analyze ...``), hence the absolute import."""

from conformance.cli import command_line

if __name__ == "__main__":
    command_line()
