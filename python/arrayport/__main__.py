"""``python -m arrayport``: the environment report (see arrayport.report)."""

import sys

from .report import main

sys.exit(main())
