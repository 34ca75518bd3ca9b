import sys

from app.engine.runners.native import main

sys.exit(main())
