"""Where the flows read and write: the repository, the committed reports and the build tree.

``reports/`` is committed and refreshed only by the commands that publish (``make qor``,
``make qor-update``, ``make pnr-study``, ``bf16-compare``, or ``--publish``); everything else writes
below ``build/`` (git-ignored). :func:`exclusive` is the lock file by which heavy steps take turns.
"""

import contextlib
import fcntl
from pathlib import Path

__all__ = ["REPO", "PUBLISHED_QOR", "PUBLISHED_PNR", "BUILD", "USER_QOR", "USER_PNR", "exclusive"]

REPO = Path(__file__).resolve().parent.parent
#: Committed QoR reports, one folder per variant.
PUBLISHED_QOR = REPO / "reports" / "qor"
#: Committed place-and-route study runs (``make pnr-study``), one folder per run: its metrics and
#: the facts the report takes from its layout files.
PUBLISHED_PNR = REPO / "reports" / "pnr"
#: Work directories and caches.
BUILD = REPO / "build"
#: Reports of a user's ``make synth`` run (not committed), one folder per variant.
USER_QOR = BUILD / "reports" / "qor"
#: Reports of ``make pnr`` (not committed), one folder per variant and placement option.
USER_PNR = BUILD / "reports" / "pnr"


@contextlib.contextmanager
def exclusive(path):
    """Hold an exclusive ``flock`` on the file ``path`` (created, with its folder, if missing) for
    the ``with`` block: processes of one machine that lock the same file take turns."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
