"""Workflows: what a command does, between ``cli/`` (which parses options and prints) and the stages.

One module per workflow: :mod:`.tasks` (run a registered task), :mod:`.validate` (check a submission),
:mod:`.model_builds` (train the models a preset needs), :mod:`.evaluate` (assemble the judges of an evaluation),
:mod:`.index_dense` (build, update or import a dense index). Every stage, task and backend is built through the
build context (:class:`medcite.pipeline.context.Context`); no workflow imports ``medcite.cli``.
"""
