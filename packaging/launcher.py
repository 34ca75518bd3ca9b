"""Entry script of the packaged app: the same ``main`` as the ``specchat`` console script."""

import sys

from app.__main__ import main

if __name__ == "__main__":
    sys.exit(main())
