"""The one formatter of a ``--set`` option (issue 34): every hint, error and swap list that shows a user a
``--set`` writes it here, so each is printed the same way and can be pasted into a shell.
:func:`medcite.config.set_lines` prints the options of a settings difference with it."""

from __future__ import annotations

import json
import shlex


def set_line(path: str, value: object) -> str:
    """``--set path=value``: a string that does not read as JSON as it is (``local``, ``NAME``, ``auto``), any
    other value as compact JSON (``null``, ``3``, ``["original"]``), the whole ``path=value`` shell-quoted when it
    needs quoting."""
    text = value if isinstance(value, str) and _reads_as_string(value) else json.dumps(value, separators=(",", ":"))
    item = f"{path}={text}"
    return "--set " + (item if shlex.quote(item) == item else shlex.quote(item))


def _reads_as_string(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False
