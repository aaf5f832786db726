"""Each operation's plan details: what it decided and why, typed (``Plan[...Details]``).

The JSON form of every type here is the ``details`` object of its command's ``--json``
plan (docs/json.md, docs/schema/), pinned by ``tests/golden``; journals and ``--plan`` files read
them back with ``from_json`` (``core.runtime.details``).
"""
