"""nbval over the chapters also compares their figures as images (book/_scripts/nbval_figures.py)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_scripts"))

from nbval_figures import (  # noqa: E402,F401  (the plugin's hooks, registered through this conftest)
    pytest_addoption,
    pytest_collection_finish,
    pytest_configure,
    pytest_runtest_call,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
