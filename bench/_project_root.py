"""The project's root on the import path: `python bench/X.py` puts bench/ there, not the root,
and the layers above the package (flows, stages) are not installed; a script imports this
module before them."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
