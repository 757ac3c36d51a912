"""The pytest plugin: what makes a conformance run a pytest session.

- :mod:`.plugin` is the ``pytest11`` entry point: pytest's hooks, the options, the run's lifecycle.
- :mod:`.items` turns suite files into collectors and each case × target × API version into an item.
- :mod:`.run_state` keeps what one session holds (plugins, targets, runners, sinks) and writes results lines.
- :mod:`.verdicts` is the one rule that turns an outcome into a pytest verdict.

The package sits on top of the extension seam and below the CLI; nothing under it imports it. The
package itself imports nothing, so a dormant plugin (no ``--target``) costs next to nothing.
"""
