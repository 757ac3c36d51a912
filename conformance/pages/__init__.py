"""The pages the harness writes for people: every HTML page, and the SVG in them or beside them, is a
Jinja2 template in ``templates/`` rendered by the one environment this module owns.

Rules:

- Markup is written in templates only. Python decides what a page shows (the values, their order, and the
  geometry of drawings: coordinates, widths, colours) and passes it as context; it never builds a tag or
  an attribute, and never calls ``html.escape``.
- Autoescape is on for every template, since every one of them is markup (HTML, or SVG that is also served
  alone as XML). A value is escaped because it reaches a template, whatever its type: numbers and digests
  included, so none is safe only by luck. Nothing marks data as safe (no ``Markup(...)``, no ``|safe``); a
  template that shows another one includes it, so only template text is ever trusted.
- ``StrictUndefined``: a name missing from the context is an error, never an empty string on the page.
- Templates are package data, found through the package like all bundled data
  (:func:`conformance.resources.page_templates`), so a wheel installed anywhere renders the same pages as
  a checkout.

Why this is its own package low in the layers, just above :mod:`conformance.resources`: the
certification page (``report``), the wire diff (``capture``) and the analysis summaries (``analysis``) all
write pages, and those three may not depend on each other; one environment below them serves all three,
and needs nothing of the harness but where its templates are.
"""

from __future__ import annotations

from functools import lru_cache

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .. import resources


@lru_cache(maxsize=1)
def environment() -> Environment:
    return Environment(
        loader=FileSystemLoader(resources.page_templates()),
        autoescape=True,  # every template here is HTML or SVG: see the module's rules
        undefined=StrictUndefined,
        # Block tags take their own line without leaving it in the page, so templates read as markup.
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render(template: str, **context) -> str:
    """The page ``templates/<template>`` shows for ``context``."""
    return environment().get_template(template).render(**context)
