"""``python -m gpmodels ...``: the same program as the ``gpmodels`` command (:mod:`gpmodels.cli`)."""

import sys

from gpmodels.cli import main

if __name__ == "__main__":
    sys.exit(main())
