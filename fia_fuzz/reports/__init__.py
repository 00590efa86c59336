"""The results dataset (parquet) and the HTML dashboard built from it."""

from fia_fuzz.reports.dashboard import render
from fia_fuzz.reports.dataset import ResultWriter, read_results

__all__ = ["ResultWriter", "read_results", "render"]
