"""`python -m lobug` runs the command line."""

import sys

from lobug.cli.main import main

sys.exit(main())
