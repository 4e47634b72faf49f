"""`python -m chunkwise.cli`: the same as the `chunkwise` command."""

import sys

from .main import main

sys.exit(main())
