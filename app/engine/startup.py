"""The engine's imports at a launch, done once and cheaply (torch-free itself).

torch, transformers and the engine's modules are some 2,000 modules and most of a warm launch
(seconds). Python's cyclic garbage collector runs again and again while they build their
millions of objects, each full pass walking every object made so far, and finds almost nothing
to free: on the bundled model's launch that was ~0.9 s of the imports' ~5 s (CPU time, pinned
to one core). ``import_engine`` imports them with the collector paused, then freezes what they
made (``gc.freeze``): those objects live as long as the process anyway, and every later full
pass (the load's own, the answers') no longer walks them.
"""

from __future__ import annotations

import gc
import importlib
import logging
import sys
from collections.abc import Sequence

ENGINE_MODULES = ("app.engine.session",)  # imports torch, transformers and the rest of the engine
log = logging.getLogger(__name__)


def import_engine(modules: Sequence[str] = ENGINE_MODULES) -> bool:
    """Import ``modules`` with the cyclic collector paused and freeze what they made; True when
    they imported. A module that cannot be imported is logged (debug) and left to the caller that
    needs it to say why; the collector is as it was either way. Modules already imported
    change nothing (no pause, no freeze)."""
    if all(name in sys.modules for name in modules):
        return True
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for name in modules:
            importlib.import_module(name)
    except Exception:  # the load that needs the module says what is wrong
        log.debug("the engine could not be imported in advance", exc_info=True)
        return False
    finally:
        # the ~10,000 objects of garbage the imports left (of ~365,000) are frozen with the rest:
        # a collection to find them first would cost what the pause saved
        gc.freeze()
        if was_enabled:
            gc.enable()
    return True
