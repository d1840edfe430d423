"""``tilewright.tirx.layout``: the public spelling of ``tilewright.layout``, re-exported.

Tile programs import ``from tilewright.tirx.layout import S, TileLayout``; the algebra lives in
``tilewright.layout`` (below ``tilewright.script``), and nothing inside tilewright imports it
through this module.
"""

from tilewright.layout import *  # noqa: F403 - a thin re-export of the layout package
from tilewright.layout import __all__  # noqa: F401 - the same public names
