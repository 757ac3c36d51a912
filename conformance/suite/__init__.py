"""The suite format: what a suite file says, and how it is read and checked. Nothing here runs a case.

``model`` is what a loaded suite is; ``loader`` reads suite files through ``source`` (YAML with lines),
``templates`` (``use:`` steps) and ``checks`` (what the JSON Schema ``suite.schema.json`` cannot know);
``expressions``, ``matchers`` and ``versioned`` are the language inside a suite; ``kinds`` (with
``components``) is the step-kind contract that the format and the runner (``conformance.runner``) both
see. The format knows no step kind of its own: whoever loads hands in the kinds.
"""
