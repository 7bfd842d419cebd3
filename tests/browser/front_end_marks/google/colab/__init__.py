"""A stand-in for Colab's ``google.colab``, imported in the emulated Colab kernel from the start,
as Colab's own kernel does. Only what a library reaches for when it finds itself on Colab."""

from . import output  # noqa: F401
