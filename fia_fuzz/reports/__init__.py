"""The results dataset (parquet), its aggregation, the HTML dashboard and JUnit export."""

from fia_fuzz.reports.dashboard import render
from fia_fuzz.reports.dataset import ResultWriter, read_results
from fia_fuzz.reports.junit import write_junit

__all__ = ["ResultWriter", "read_results", "render", "write_junit"]
