"""Running suites: one case at one API version against one target, and what happened.

The suite format (``conformance.suite``: model, loader, templates, checks) knows nothing of running;
this package runs what it loaded. ``runner`` runs an item and watches the target, ``parallel`` runs many;
``context`` is what the steps of one item share and the exceptions a step ends with; ``dispatch`` runs a
step through its kind; ``policy`` says which version a request goes out at, where it goes and whom a
departure blames; ``exchange`` sends one request; ``expect`` compares a response with a step's ``expect``;
``steps/`` holds one module per built-in step kind, each with its run and its check. Nothing here knows
pytest.
"""
