"""The pytest plugin: what makes a conformance run a pytest session.

- :mod:`.plugin` is the ``pytest11`` entry point: pytest's hooks, the options, the run's lifecycle.
- :mod:`.items` turns suite files into collectors and each case × target × API version into an item.
- :mod:`.run_state` keeps what one pytest session holds beside the run's :class:`~conformance.session.RunSession`
  (targets, runners, markers); the session records results, calls the sinks and hooks and decides verdicts.

The package sits on top of the run session and the extension seam, below the CLI; nothing under it imports it. The
package itself imports nothing, so a dormant plugin (no ``--target``) costs next to nothing.
"""
