"""``python -m docs_tools.figures`` (what ``python3 dev.py figures`` runs): see the package's docstring."""

import sys

from docs_tools.figures import main

sys.exit(main(sys.argv[1:]))
