"""Read-only web viewer over run directories (``medcite view``; docs/VIEWER.md).

``medcite.viewer.app.create_app(runs_dir)`` builds the FastAPI app; the modules below it read runs
tolerantly (``loader``, ``files``) and build page models (``topic``, ``summary``, ``compare``). Importing
this package imports nothing heavy.
"""
