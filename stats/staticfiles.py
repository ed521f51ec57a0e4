"""plotly.js for the charts, served from the installed plotly package rather than a CDN or a copy in the repository:
the charts work offline and always run the plotly.js the Python package was built against."""

from pathlib import Path

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "plotly/plotly.min.js"


def _package_data() -> Path:
    return Path(plotly.__file__).parent / "package_data"


class PlotlyFinder(BaseFinder):
    """Finds exactly ``plotly/plotly.min.js`` (for runserver, WhiteNoise and collectstatic)."""

    def check(self, **kwargs):
        if not (_package_data() / "plotly.min.js").is_file():
            from django.core.checks import Error

            return [Error("plotly.min.js is missing from the plotly package", id="stats.E001")]
        return []

    def find(self, path, find_all=False, **kwargs):
        if path == PLOTLY_JS:
            source = str(_package_data() / "plotly.min.js")
            return [source] if find_all else source
        return [] if find_all else None

    def list(self, ignore_patterns):
        storage = FileSystemStorage(location=str(_package_data()))
        storage.prefix = "plotly"
        yield "plotly.min.js", storage
