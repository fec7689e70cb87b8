"""The ``medcite`` command line: one module per command group, loaded lazily."""
