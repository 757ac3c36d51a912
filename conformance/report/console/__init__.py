"""What a person reads on a terminal: ``progress`` while a run goes, ``compact`` its departures at the end,
``text`` one case result, ``show`` one item's whole record, ``tables`` the commands' tables.
"""
