"""`baton report`: the HTML page about a run and its text summary."""

from baton.cockpit.report.builder import REPORT_FILE_NAME, Report, build_report, write_report

__all__ = ["REPORT_FILE_NAME", "Report", "build_report", "write_report"]
