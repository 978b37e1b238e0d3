"""The plotly.js that draws the figures in a browser and in an offline report.

plotly.js's cartesian partial bundle (npm ``plotly.js-cartesian-dist-min``: trace types bar, box, scatter,
heatmap, histogram, contour, image, pie, violin; every figure here is bar, box or scatter) is 1.5 MB against
the full bundle's 4.8 MB, which a browser spends ~0.5 s evaluating on every page load. It lies in
``assets/vendor/`` and is used only while it is the plotly.js release the installed ``plotly`` package builds
figures for; otherwise the full bundle is (Dash's for pages, plotly's for reports).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from plotly.offline import get_plotlyjs_version

__all__ = ["PARTIAL_BUNDLE", "assets_folder", "partial_bundle"]

log = logging.getLogger(__name__)

PARTIAL_BUNDLE = "vendor/plotly-cartesian.min.js"  # relative to the assets folder
_VERSION = re.compile(rb"plotly\.js \([a-z -]+\) v(\d+\.\d+\.\d+)")  # in the bundle's header comment


def assets_folder() -> str:
    """The CSS/JS folder served as the app's assets: inside the installed package, else the repository's
    top-level ``assets/``."""
    packaged = Path(__file__).resolve().parents[1] / "assets"
    if packaged.is_dir():
        return str(packaged)
    return str(Path(__file__).resolve().parents[2] / "assets")


def partial_bundle(folder: str | None = None) -> Path | None:
    """The partial bundle in ``folder`` (default ``assets_folder()``), or None when it is missing or is not the
    plotly.js version of the installed plotly (``plotly.offline.get_plotlyjs_version()``, read against the
    bundle's header comment): a figure is never drawn by another plotly.js than it was built for."""
    path = Path(folder or assets_folder()) / PARTIAL_BUNDLE
    try:
        with open(path, "rb") as f:
            found = _VERSION.search(f.read(300))
    except OSError:
        return None
    if found is None or found.group(1).decode() != get_plotlyjs_version():
        log.warning("%s is not plotly.js %s: the full bundle is used", path, get_plotlyjs_version())
        return None
    return path
