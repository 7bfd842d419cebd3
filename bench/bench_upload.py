"""Upload speed and client memory against the sandbox, measured in one run.

    /work/venv/bin/python bench/bench_upload.py            # 1 GiB and 100 MiB files
    /work/venv/bin/python bench/bench_upload.py --size-mib 256 --small-mib 64

Prints:

* speed: ``client.materials.upload`` of a 1 GiB file (MD5, gen-upload-url, multipart
  initiate, parallel part PUTs, complete with the server's whole-file MD5 check and ffmpeg
  probe) against the floor a shell user gets: ``md5sum`` plus one ``curl -T`` PUT of the same
  bytes to a presigned URL of the same sandbox. Target: ratio <= 1.5.
* memory: the peak resident set (``ru_maxrss``) of a process that imports dubkit and uploads,
  for a 100 MiB and a 1 GiB file. Target: <= 150 MB and flat (the file never sits in memory).

Every measured step starts after ``os.sync()``, so none pays for the disk writes of the one
before. The client runs in a subprocess, so its memory is its own; the sandbox runs in this process.
Without ``curl`` on PATH the baseline PUT is made by a Python subprocess that streams the file
with ``http.client`` (said in the output); ``md5sum`` missing likewise falls back to hashlib.
The test files are WAV (a header and random samples), so registration's ffmpeg probe accepts
them; random samples keep any layer from compressing them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import dubkit
from dubkit import start_sandbox as start
from dubkit.samples import noise_wav

MiB = 1024 * 1024

CLIENT = r"""
import json, resource, sys, time
import dubkit
client = dubkit.Client(sys.argv[1], sys.argv[2])
marks = {}
started = time.perf_counter()
material = client.materials.upload(sys.argv[3], state_dir=sys.argv[4], progress=lambda p:
                                   marks.setdefault(p.phase, time.perf_counter() - started))
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "marks": marks, "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "materialId": material.material_id, "fileHash": material.file_hash,
                  "filesize": material.filesize}))
"""

PUT_FALLBACK = r"""
import http.client, os, sys, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
conn = http.client.HTTPConnection(url.hostname, url.port)
size = os.path.getsize(sys.argv[2])
with open(sys.argv[2], "rb") as body:
    conn.request("PUT", url.path + "?" + url.query, body=body, headers={"Content-Length": str(size)})
print(conn.getresponse().status)
"""


def timed(cmd: list[str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return time.perf_counter() - started, done.stdout.strip()


def baseline(box, path: Path) -> tuple[float, float, str]:
    """Seconds of md5sum and of one PUT of the file to a presigned URL; which PUT tool."""
    if shutil.which("md5sum"):
        md5_seconds, out = timed(["md5sum", str(path)])
        file_hash = out.split()[0]
    else:
        import hashlib

        started = time.perf_counter()
        with open(path, "rb") as f:
            file_hash = hashlib.file_digest(f, "md5").hexdigest()
        md5_seconds = time.perf_counter() - started
    # Another key, so the client's own upload of the same bytes is not answered as a duplicate.
    other = dubkit.Client(box.create_key("bench-baseline"), box.url)
    url = other.call("materials.gen_upload_url", {"fileHash": file_hash, "fileName": path.name})[
        "uploadUrl"
    ]
    if shutil.which("curl"):
        tool = "curl -T"
        put_seconds, status = timed(
            ["curl", "-sS", "-T", str(path), "-o", "/dev/null", "-w", "%{http_code}", url]
        )
    else:
        tool = "python http.client (curl not found)"
        put_seconds, status = timed([sys.executable, "-c", PUT_FALLBACK, url, str(path)])
    if status != "200":
        raise RuntimeError(f"baseline PUT answered {status}")
    return md5_seconds, put_seconds, tool


def client_upload(box, path: Path, state_dir: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CLIENT, box.api_key, box.url, str(path), str(state_dir)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--small-mib", type=int, default=100)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="dubkit-bench-upload-"))
    box = start(work / "sandbox")
    try:
        big, small = work / "big.wav", work / "small.wav"
        noise_wav(big, args.size_mib * MiB)
        noise_wav(small, args.small_mib * MiB)
        # Each measured step starts with no dirty pages waiting for the disk, so none pays
        # for the writes of the one before.
        os.sync()
        md5_s, put_s, tool = baseline(box, big)
        os.sync()
        mine = client_upload(box, big, work / "state")
        small_run = client_upload(box, small, work / "state")
        floor = md5_s + put_s
        print(
            f"file: {args.size_mib} MiB WAV; machine: {os.cpu_count()} cores; "
            f"sandbox in this process, client in a subprocess"
        )
        print(f"baseline: md5sum {md5_s:.2f} s + {tool} PUT {put_s:.2f} s = {floor:.2f} s")
        print(
            f"dubkit:   client.materials.upload {mine['seconds']:.2f} s "
            f"(MD5, dedup check, multipart, complete with server-side MD5 and probe)"
        )
        marks = mine["marks"]
        print(
            f"          = MD5 {marks['uploading']:.2f} s + parts "
            f"{marks['registering'] - marks['uploading']:.2f} s + complete "
            f"{mine['seconds'] - marks['registering']:.2f} s"
        )
        print(f"ratio dubkit / baseline: {mine['seconds'] / floor:.2f}  (target <= 1.5)")
        big_mb, small_mb = mine["maxrss_kb"] / 1024, small_run["maxrss_kb"] / 1024
        print(
            f"client peak RSS: {small_mb:.1f} MB for {args.small_mib} MiB, {big_mb:.1f} MB "
            f"for {args.size_mib} MiB; growth {big_mb - small_mb:+.1f} MB "
            f"(target <= 150 MB and flat)"
        )
        assert mine["filesize"] == big.stat().st_size
    finally:
        box.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
