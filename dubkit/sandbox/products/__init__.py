"""One module per product; importing this package registers every handler.

Each module decorates its functions with :func:`dubkit.sandbox.operations.handles`.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
