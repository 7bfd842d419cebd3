"""From what a caller names to the rows of a batch, checked and quoted before anything is sent.

Files are paths, globs, folders or registered materials; each distinct file is measured here
(its MD5, its length, whether it has a picture: kept in the ledger by path, size and mtime, so
a resumed batch does not hash a course again). Every target locale is checked against the
service's published list, every target's request is built and its voices looked up
(``client.dubbing.draft``); a missing file, an unknown locale, a cast without a role's voice
in one target: a ValidationError naming it, before any upload.

A row's *fingerprint* is what its dub is made from (the file's bytes, the locale, the whole
request but the material id): when it differs from the ledger's, the row gets a new revision
and only that row is dubbed again.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .. import locales
from ..errors import ValidationError
from ..results import Material
from ..schema import prices
from ..uploads import check_media_file
from .ledger import Ledger
from .rows import Row, row_key

MEDIA_SUFFIXES = frozenset(
    ".mp4 .m4v .mov .mkv .webm .avi .flv .ts .mpg .mpeg .wav .mp3 .m4a .aac .flac .ogg .opus "
    ".wma .aiff".split()
)


class Drafts(Protocol):
    """``client.dubbing`` as a plan uses it."""

    def draft(self, **options: Any) -> Any: ...


@dataclass
class Source:
    """One distinct file of the batch (or a registered material)."""

    name: str  # the stem the outputs are named after
    field: str  # where the caller named it ("files[2]"), for errors
    path: Path | None
    material: Material | None
    md5: str
    seconds: float
    video: bool


@dataclass
class Plan:
    """The rows of one call, as they will run: ``new`` never seen, ``changed`` (old → new
    revision) since the ledger's, the rest as the ledger has them."""

    rows: list[Row]
    new: list[Row] = field(default_factory=list)
    changed: list[tuple[Row, Row]] = field(default_factory=list)

    @property
    def quote(self) -> float:
        """Credits of the whole batch: charged (or, where not reported, quoted) for rows that
        ran, quoted for the rest."""
        return sum(spend_of(r) for r in self.rows if r.status != "over budget")

    @property
    def to_send(self) -> list[Row]:
        return [r for r in self.rows if r.status in ("planned", "cancelled")]

    def describe(self) -> str:
        """What this call will do, in words: said before anything is sent."""
        said = [
            f"{len(self.rows)} rows ({len(self.to_send)} to dub), quoted {self.quote:g} credits"
        ]
        if self.changed:
            names = ", ".join(f"{new.name} (revision {new.revision})" for _, new in self.changed)
            why = sorted({w for old, new in self.changed for w in what_changed(old, new)})
            said.append(f"changed since the ledger's ({', '.join(why)}): dubbed again as {names}")
        return "; ".join(said)


def spend_of(row: Row) -> float:
    """What a row costs the batch: its charge where the service said it, else its quote."""
    if row.may_be_charged and row.charged is not None:
        return row.charged
    return row.quote


def what_changed(old: Row, new: Row) -> list[str]:
    if old.file_hash != new.file_hash:
        return ["the file"]
    said = [
        name
        for name in ("voices", "source", "options")
        if old.settings.get(name) != new.settings.get(name)
    ]
    return said or ["the request"]


def expand(files: Any) -> list[tuple[str, Path | Material]]:
    """Paths, globs, folders and materials -> ``(field, file or material)`` in a stable order.

    A folder gives its media files (by suffix, not recursing); a glob its matches, sorted."""
    given = [files] if isinstance(files, (str, os.PathLike, Material)) else list(files)
    if not given:
        raise ValidationError("files", "name at least one file, folder, glob or material")
    found: list[tuple[str, Path | Material]] = []
    for i, item in enumerate(given):
        where = f"files[{i}]" if len(given) > 1 else "files"
        if isinstance(item, Material):
            found.append((where, item))
            continue
        if not isinstance(item, (str, os.PathLike)):
            raise ValidationError(where, f"expected a path, glob, folder or Material, got {item!r}")
        text = os.fspath(item)
        path = Path(text).expanduser()
        if path.is_dir():
            inside = sorted(p for p in path.iterdir() if p.suffix.lower() in MEDIA_SUFFIXES)
            if not inside:
                raise ValidationError(where, f"the folder {text!r} holds no audio or video files")
            found += [(f"{where} ({p.name})", p) for p in inside]
        elif glob.has_magic(text):
            matched = sorted(Path(m) for m in glob.glob(os.path.expanduser(text), recursive=True))
            matched = [m for m in matched if m.is_file()]
            if not matched:
                raise ValidationError(where, f"the pattern {text!r} matches no file")
            found += [(f"{where} ({m.name})", m) for m in matched]
        else:
            found.append((where, check_media_file(path, where)))
    return found


def measure(named: list[tuple[str, Path | Material]], ledger: Ledger) -> list[Source]:
    """Each distinct file once: its MD5, length and kind (cached in the ledger, measured two
    at a time otherwise); two files whose outputs would share a name are refused, naming both."""
    with ThreadPoolExecutor(max_workers=2) as pool:  # ffprobe runs and MD5 release the GIL
        found = list(pool.map(lambda pair: _source(pair[0], pair[1], ledger), named))
    sources: dict[str, Source] = {}
    by_name: dict[str, Source] = {}
    for source in found:
        if source.md5 in sources:
            continue  # the same bytes named twice: one upload, one set of rows
        other = by_name.get(source.name)
        if other is not None:
            raise ValidationError(
                source.field,
                f"{source.name!r} would write the same outputs as {other.field} "
                f"({other.path or other.name}): rename one of them",
            )
        sources[source.md5] = by_name[source.name] = source
    return list(sources.values())


def _source(where: str, item: Path | Material, ledger: Ledger) -> Source:
    """A file's facts, from the ledger's cache when the file is as it was measured."""
    if isinstance(item, Material):
        return _material_source(where, item)
    from ..media.av import probe  # ffmpeg loads with the first file
    from ..uploads.files import file_md5

    path = check_media_file(item, where).resolve()
    stat = path.stat()
    facts = ledger.facts(str(path), stat.st_size, stat.st_mtime_ns)
    if facts is None:
        try:
            info = probe(path)
        except Exception as exc:
            raise ValidationError(where, f"{str(item)!r} is not audio or video ({exc})") from None
        md5 = file_md5(path)
        ledger.put_facts(
            str(path), stat.st_size, stat.st_mtime_ns, md5, info.duration, info.has_video
        )
        facts = {"md5": md5, "seconds": info.duration, "video": info.has_video}
    return Source(
        path.stem, where, path, None, facts["md5"], facts["seconds"], bool(facts["video"])
    )


def _material_source(where: str, material: Material) -> Source:
    if not material.material_id or not material.file_hash:
        raise ValidationError(where, "a registered Material (from upload() or list())")
    if material.duration_seconds is None:
        raise ValidationError(
            where, f"{material.material_id!r} has no duration yet, so its dub cannot be quoted"
        )
    stem = Path(material.name or material.material_id).stem
    return Source(
        stem,
        where,
        None,
        material,
        material.file_hash.lower(),
        material.duration_seconds,
        material.category == "video",
    )


def check_targets(targets: Any, *, strict: bool = True) -> list[str]:
    """The target locales, each checked against the service's published list (``strict``)."""
    given = [targets] if isinstance(targets, str) else list(targets or [])
    if not given:
        raise ValidationError("targets", "name at least one locale to dub into, e.g. ['fr-FR']")
    checked = []
    for i, code in enumerate(given):
        where = f"targets[{i}]"
        if not isinstance(code, str) or not code.strip():
            raise ValidationError(where, f"expected a locale code such as 'fr-FR', got {code!r}")
        code = code.strip()
        if strict and code not in locales.TARGET:
            near = locales.closest(code, locales.TARGET)
            hint = f" (did you mean {' or '.join(near)}?)" if near else ""
            raise ValidationError(
                where,
                f"{code!r} is not among the {len(locales.TARGET)} target locales the service "
                f"lists{hint}; pass strict_locales=False to send it anyway",
            )
        if code not in checked:
            checked.append(code)
    return checked


def drafts_for(dubbing: Drafts, targets: list[str], options: Mapping[str, Any]) -> dict[str, Any]:
    """Each target's checked request (``client.dubbing.draft``); an error names the target."""
    made = {}
    for i, target in enumerate(targets):
        try:
            made[target] = dubbing.draft(target=target, **options)
        except ValidationError as exc:
            raise ValidationError(f"targets[{i}] ({target}): {exc.field}", exc.problem) from None
    return made


def fingerprint(source: Source, draft: Any) -> tuple[str, dict[str, Any]]:
    """What a row's dub is made from, hashed; and the settings a report shows."""
    request = draft.request("", "video" if source.video else "audio")
    wire = request.model_dump(mode="json", by_alias=True, exclude_none=True)
    wire.pop("source", None)
    made_of = {"file": source.md5, "request": wire}
    digest = hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()
    speakers = (wire.get("options") or {}).get("voiceSpeakers") or {}
    settings = {
        "voices": [v.get("voiceId") for v in speakers.get("selectedVoicesList") or []],
        "source": draft.source,
        "options": wire.get("options") or {},
    }
    return digest[:32], settings


def plan(sources: Sequence[Source], drafts: Mapping[str, Any], ledger: Ledger) -> Plan:
    """The rows of ``sources`` × ``drafts`` (one per target), written to the ledger: new rows,
    new revisions of changed ones; rows the ledger has as they were are kept as they are."""
    made = Plan(rows=[])
    seq = max((r.seq for r in ledger.rows()), default=0)  # a new row goes after the rest
    for source in sources:
        for locale, draft in drafts.items():
            digest, settings = fingerprint(source, draft)
            quote = prices.dub_quote(source.seconds, lipsync=draft.lipsync and source.video)
            fresh = Row(
                key=row_key(source.name, locale),
                revision=1,
                seq=seq + 1,
                file_name=source.name,
                file_path=str(source.path) if source.path else f"material:{source.name}",
                file_hash=source.md5,
                locale=locale,
                fingerprint=digest,
                settings=settings,
                quote=float(quote.credits),
                estimate=quote.estimate,
            )
            old = ledger.row(fresh.key)
            if old is None:
                seq += 1
                made.new.append(ledger.add(fresh))
                made.rows.append(made.new[-1])
            elif old.fingerprint != digest:
                fresh.revision, fresh.seq = old.revision + 1, old.seq  # keeps its place
                new = ledger.add(fresh)
                made.changed.append((old, new))
                made.rows.append(new)
            else:
                if old.file_path != fresh.file_path and source.path:  # moved, same bytes
                    old = ledger.update(old, file_path=fresh.file_path)
                made.rows.append(old)
    return made
