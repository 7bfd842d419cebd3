"""``dubkit tts`` and ``dubkit translate``: one text, or a file of lines, from a terminal."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import cast, get_args

from ..errors import ValidationError
from ..schema import TTSFormat
from . import casts
from ._output import UsageError, client, lines_of, print_json, table

FORMATS = get_args(TTSFormat)


def add(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tts = commands.add_parser(
        "tts",
        help="speak a text, or every line of a file, with one voice",
        description='dubkit tts "Hello" --voice ID -o hello.m4a, or dubkit tts --file '
        "script.txt --voice ID --out-dir DIR (one audio file per line, NNN.<format>).",
    )
    tts.add_argument("text", nargs="?", help="the text to speak")
    tts.add_argument("--file", help="a text file: each non-blank line is spoken")
    tts.add_argument("--voice", help="a voice id (dubkit voices lists them)")
    tts.add_argument(
        "--cast",
        help='a cast file: each line names its role ("ALICE: Hello"), which gives the voice',
    )
    tts.add_argument("--locale", help="the locale to speak (with --cast: the roles' voices in it)")
    tts.add_argument("-o", "--output", help="where the one text's audio goes")
    tts.add_argument("--out-dir", help="where a file's lines go (default: here)")
    tts.add_argument("--format", choices=FORMATS, help="audio format (default: -o's, else m4a)")
    tts.add_argument("--json", action="store_true", help="what was written, as JSON")
    tts.set_defaults(run=speak)

    translate = commands.add_parser(
        "translate",
        help="translate a text, or every line of a file",
        description='dubkit translate "Hello" --from en-US --to fr-FR',
    )
    translate.add_argument("text", nargs="?", help="the text to translate")
    translate.add_argument("--file", help="a text file: each non-blank line is one segment")
    translate.add_argument("--from", dest="source", required=True, help="source locale, e.g. en-US")
    translate.add_argument("--to", dest="target", required=True, help="target locale, e.g. fr-FR")
    translate.add_argument("--json", action="store_true", help="sources and translations as JSON")
    translate.set_defaults(run=translate_texts)


def _texts(args: argparse.Namespace) -> list[str]:
    if (args.text is None) == (args.file is None):
        raise UsageError("give one text, or --file with a line per text (not both)")
    if args.file is not None:
        return lines_of(args.file, "--file")
    if not args.text.strip():
        raise UsageError("text: empty")
    return [args.text]


def speak(args: argparse.Namespace) -> int:
    texts = _texts(args)
    if args.file is not None and args.output:
        raise UsageError("-o is for one text; a --file writes one file a line into --out-dir")
    if args.file is None and (args.out_dir or not args.output):
        raise UsageError(
            "-o: where one text's audio goes, e.g. -o hello.m4a (--out-dir is for --file)"
        )
    target = Path(args.output) if args.output else None
    fmt = args.format or (target.suffix.lstrip(".").lower() if target else "") or "m4a"
    if fmt not in FORMATS:
        raise UsageError(f"-o: {target} is not one of {', '.join(FORMATS)}; or give --format")
    if (args.voice is None) == (args.cast is None):
        raise UsageError("--voice ID, or --cast FILE whose roles the lines name (one of the two)")
    cast_of = casts.read(args.cast) if args.cast else None
    if cast_of is not None:
        try:  # every line's role is checked before anything is sent
            cast_of.lines_for(texts, args.locale)
        except ValidationError as exc:
            raise UsageError(f"{args.file or 'text'}: {exc}") from None
    with client() as api:
        speech = api.tts.batch(
            texts,
            voice=args.voice,
            cast=cast_of,
            locale=args.locale,
            output_format=cast(TTSFormat, fmt),
            progress=len(texts) > 1,
        )
        if target is not None:
            directory, name = target.parent, target.stem
        else:
            directory, name = Path(args.out_dir or "."), None
        written: list[dict[str, object]] = []
        for line in speech:
            path = line.save(directory, name) if line.ok else None
            written.append(
                {
                    "text": line.text,
                    "voiceId": line.voice_id,
                    "file": str(path) if path else None,
                    "duration": line.duration,
                    "error": line.error_message,
                }
            )
    if args.json:
        print_json(written)
    else:
        for row in written:
            print(row["file"] or f"not spoken: {row['error']} ({row['text']})")
    failed = [row for row in written if row["error"]]
    if failed:
        print(f"dubkit tts: {len(failed)} of {len(written)} lines not spoken", file=sys.stderr)
    return 1 if failed else 0


def translate_texts(args: argparse.Namespace) -> int:
    texts = _texts(args)
    with client() as api:
        result = api.translate.batch(
            texts, source=args.source, target=args.target, progress=len(texts) > 1
        )
    rows = [
        {"source": source, "translation": text, "error": item.error_message}
        for source, text, item in zip(result.sources, result.texts, result.items)
    ]
    if args.json:
        print_json(rows)
    elif args.file is None:
        print(rows[0]["translation"] or f"not translated: {rows[0]['error']}")
    else:
        print(table(rows, ("source", "translation", "error"), width=60))
    failed = [row for row in rows if row["error"]]
    if failed:
        print(f"dubkit translate: {len(failed)} of {len(rows)} segments failed", file=sys.stderr)
    return 1 if failed else 0
