"""Catalogs: where tables are found by name, and what a catalog owns of a commit.

A run opens one catalog (``factory.open_catalog``): the filesystem catalog of a warehouse
or of bare locations (today's addressing), or one named by ``--catalog`` (a paimon.yaml,
or a name in ~/.paimon-cli.yaml). The catalog resolves TABLE (``db.table``, ``db.*``,
``*.*``) by its own listing and loads tables with their :class:`CatalogEnvironment`, which
the write layer consults at every commit (the catalog's lock, or a catalog commit).
"""
