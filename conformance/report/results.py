"""Where the results store was: it is :mod:`conformance.results.store` now (below every layer that writes or reads
results). These names stay importable from here only until the branches that still use them are merged."""

from ..results.store import ResultsWriter, new_run_id  # noqa: F401
from ..results.store import read_lines as read_results  # noqa: F401
