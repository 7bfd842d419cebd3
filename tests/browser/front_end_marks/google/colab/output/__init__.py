"""What anywidget calls on Colab: the custom widget manager switch and its script's address."""


def enable_custom_widget_manager() -> None:
    """On Colab this loads the widget manager for third-party widgets; the emulating page's
    manager (JupyterLab's) already renders them."""


class _widgets:  # noqa: N801 - the name Colab's module has
    _installed_url = None
