"""``conformance analyze site``: the interop site, a static site over every run, built by a Spark job.

:mod:`.facts` aggregates the existing jobs' outputs in Spark, :mod:`.evidence` finds what a click on a
departure shows, :mod:`.model` shapes the pages' JSON, :mod:`.pictures` the SVG geometry, and
:mod:`.build` writes the pages through :mod:`conformance.pages`.
"""
