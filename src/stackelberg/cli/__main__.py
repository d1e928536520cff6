"""`python -m stackelberg.cli`: the `stackelberg` command."""

import sys

from stackelberg.cli import main

sys.exit(main())
