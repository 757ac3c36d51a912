"""The outputs' options: added to every command that runs suites and to pytest, whatever a plugin declares."""

from __future__ import annotations

import argparse

import pytest

from conformance.report.sinks import Output, OutputOption, add_output_options


def test_an_output_option_a_command_has_already_is_left_out_with_a_warning():
    class Clashing(Output):
        name = "clashing"
        options = (OutputOption("--results", "a plugin's mistake"), OutputOption("--clashing-file", "its own"))

    parser = argparse.ArgumentParser()
    parser.add_argument("--results")
    with pytest.warns(UserWarning, match="output 'clashing': --results left out"):
        add_output_options(parser, [Clashing])
    assert parser.parse_args(["--clashing-file", "x"]).clashing_file == "x"
