"""The emulated VS Code kernel: VS Code's marks (``VSCODE_PID``/``VSCODE_CWD`` from the kernel
spec, and ``__vsc_ipynb_file__``, which the Jupyter extension sets in the user namespace) and
none of a Jupyter server's environment (VS Code starts kernels itself)."""

import os
import sys

for name in ("JPY_SESSION_NAME", "JUPYTERHUB_SERVICE_PREFIX", "JPY_PARENT_PID"):
    os.environ.pop(name, None)

sys.argv.append("--IPKernelApp.exec_lines=__vsc_ipynb_file__ = '/home/student/notebook.ipynb'")

from ipykernel import kernelapp  # noqa: E402

kernelapp.launch_new_instance()
