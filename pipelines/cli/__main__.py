"""`python -m pipelines.cli ...` runs `jsl ...` (what the Makefile calls)."""

import sys

from pipelines.cli.main import main

sys.exit(main())
