"""Workflows: what a command does, between ``cli/`` (which parses options and prints) and the stages.

One module per workflow: :mod:`.tasks` (run a registered task), :mod:`.validate` (check a submission),
:mod:`.model_builds` (train the models a preset needs), :mod:`.evaluate` (assemble the judges of an evaluation),
:mod:`.index_dense` (build, update or import a dense index), :mod:`.corpus` (ingest, inspect, mirror PubMed),
:mod:`.search`, :mod:`.demo`, :mod:`.train` and :mod:`.presets`. Every stage, task and backend is built through the
build context (:class:`medcite.pipeline.context.Context`); no workflow imports ``medcite.cli``, and ``medcite.cli``
reaches the stages only through the workflows (an import-linter contract): they return typed results and
re-export the few option and result types a command names.
"""
