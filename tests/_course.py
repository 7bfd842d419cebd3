"""Short narrated clips for the batch tests: a course whose dubs take about a second each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dubkit import samples


def course_of(
    folder: Path, count: int, *, stem: str = "clip", words: str = "Welcome back."
) -> list[Path]:
    """``count`` clips (a sentence each, 160x90, 10 fps) named ``<stem>00.mp4``, ...: each one
    distinct bytes, so each is a material of its own."""
    return [
        samples.narrated_clip(
            folder / f"{stem}{i:02d}.mp4", [f"Part {i}. {words}"], width=160, height=90, fps=10
        )
        for i in range(count)
    ]


LOCALES = "fr-FR,de-DE,es-ES"


def dubbing(env: dict[str, str], course: Path, out: Path, *flags: str) -> subprocess.Popen[str]:
    """``dubkit dub COURSE --to fr-FR,de-DE,es-ES --out OUT [flags]`` started as a terminal
    would (no stdin), its stderr kept."""
    return subprocess.Popen(
        [sys.executable, "-m", "dubkit", "dub", str(course), "--to", LOCALES, "--out", str(out)]
        + list(flags),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
