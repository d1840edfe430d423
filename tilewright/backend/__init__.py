"""Backends: for each target kind, how a module is lowered, printed, compiled and loaded.

``BACKENDS`` is the one table (``table.py``); ``backend_for(target)`` finds a row;
``compilers.py`` holds the compilers the rows name. ``tilewright.driver`` runs a row's
stages from the scheduled module to the loaded one (``tw.build``).
"""

from tilewright.backend.table import (
    BACKENDS,
    Backend,
    CodeGenerator,
    Compiler,
    backend_for,
    lowering_stages,
)

__all__ = ["BACKENDS", "Backend", "CodeGenerator", "Compiler", "backend_for", "lowering_stages"]
