"""What more than one test package uses, in one place: waiting for a condition, users and unique names, free and
closed ports, the portal's actors and sandbox cluster as fixtures, and the paths and Spark settings the tests share.

Test modules import these from here, never from another module's ``conftest.py`` (pytest imports a conftest itself,
under a name of its own, so a second import of it is a second copy); ``tests/test_support_layout.py`` keeps it so."""
