import sys

from fia_fuzz.cli import main

sys.exit(main())
