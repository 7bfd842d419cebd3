"""The emulated Colab kernel: Colab's marks (``google.colab`` imported, ``COLAB_RELEASE_TAG``
from the kernel spec) and none of a Jupyter server's environment (Colab has no Jupyter server:
its kernels run under a fork of jupyter_kernel_gateway)."""

import os

for name in ("JPY_SESSION_NAME", "JUPYTERHUB_SERVICE_PREFIX", "JPY_PARENT_PID"):
    os.environ.pop(name, None)

import google.colab  # noqa: E402,F401
from ipykernel import kernelapp  # noqa: E402

kernelapp.launch_new_instance()
