"""The results record and everything that names it: fields, schema version, item ids, provenance.

Rules: a results line is built and read only through :mod:`.record`; an item is named only through
:mod:`.ids`; which harness wrote a line is asked of :mod:`.provenance`. Nothing here imports the rest
of the harness (only :mod:`conformance.resources`), so every layer that writes or reads results can
import it. ``schema.json`` beside this file is :func:`.record.json_schema` written out (a test keeps them equal).
"""

from .ids import case_id, item_id, item_id_of
from .provenance import Provenance, provenance
from .record import (FIELDS, ITEM_FIELDS, OUTCOME_LABELS, OUTCOME_ORDER, RUN_FIELDS, SCHEMA_VERSION,
                     STOPPED_ANSWERING, Outcome, Requirement, ResultRecord, StepRole, Verdict, binding, json_schema, outcome_of,
                     upgrade)

__all__ = ["FIELDS", "ITEM_FIELDS", "OUTCOME_LABELS", "OUTCOME_ORDER", "RUN_FIELDS", "SCHEMA_VERSION",
           "STOPPED_ANSWERING", "Outcome", "Provenance", "Requirement", "ResultRecord", "StepRole", "Verdict", "binding", "case_id",
           "item_id", "item_id_of", "json_schema", "outcome_of", "provenance", "upgrade"]
