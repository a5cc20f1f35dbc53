"""Where the flows read and write: the repository, the committed reports and the build tree.

``reports/`` is committed and refreshed only by the commands that publish (``make qor``,
``make qor-update``, ``bf16-compare``, or ``--publish``); everything else writes below ``build/``
(git-ignored).
"""

from pathlib import Path

__all__ = ["REPO", "PUBLISHED_QOR", "BUILD", "USER_QOR", "USER_PNR"]

REPO = Path(__file__).resolve().parent.parent
#: Committed QoR reports, one folder per variant.
PUBLISHED_QOR = REPO / "reports" / "qor"
#: Work directories and caches.
BUILD = REPO / "build"
#: Reports of a user's ``make synth`` run (not committed), one folder per variant.
USER_QOR = BUILD / "reports" / "qor"
#: Reports of ``make pnr`` (not committed), one folder per variant and placement option.
USER_PNR = BUILD / "reports" / "pnr"
