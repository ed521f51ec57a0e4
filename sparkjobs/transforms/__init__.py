"""Transform: pure DataFrame -> DataFrame functions, no I/O and no Django (executors import this package).

Output columns are named as the fields of the models they are loaded into (:mod:`stats.models.rollups`,
:mod:`stats.models.rankings`), so the one writer (:mod:`sparkjobs.load`) maps them by name."""
