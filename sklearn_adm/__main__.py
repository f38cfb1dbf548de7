"""``python -m sklearn_adm``: the command line (:func:`sklearn_adm._cli.main`)."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
