"""Materials and the sandbox's object storage over raw HTTP, no upload helper: what any client
of the service would send (presigned PUTs, multipart sessions, completion, delete), and the
races and limits the storage holds."""

from __future__ import annotations

import hashlib
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

import pytest
import requests
from _http import local_http
from _storage_fixtures import api, storage_defaults  # noqa: F401  (fixtures)
from _waiting import wait_for

import dubkit
from dubkit import samples
from dubkit.sandbox.storage import DEFAULT_PART_SIZE

MiB = 1024 * 1024


def _wav_server(wav: bytes):
    return local_http(lambda method, headers, body: (200, {"Content-Type": "audio/wav"}, wav))


@pytest.fixture(scope="module")
def wav(tmp_path_factory):
    """11 MiB of WAV: two parts of 8 MiB slots, or three of 5 MiB."""
    path = samples.noise_wav(tmp_path_factory.mktemp("m") / "noise.wav", 11 * MiB)
    return path.read_bytes()


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    return samples.narrated_clip(
        tmp_path_factory.mktemp("m") / "clip.mp4",
        ["Materials are registered.", "With a picture and sound."],
    )


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def single_upload(api, data: bytes, name: str) -> dict:
    started = api.call("materials.gen_upload_url", {"fileHash": md5(data), "fileName": name})
    if started.get("material"):
        return started["material"]
    assert requests.put(started["uploadUrl"], data=data).status_code == 200
    return api.call(
        "materials.complete",
        {
            "s3Uri": started["s3Uri"],
            "fileName": name,
            "materialId": started["materialId"],
            "fileHash": md5(data),
        },
    )


def multipart(api, data: bytes, name: str = "noise.wav", file_hash: str | None = None):
    file_hash = file_hash or md5(data)
    session = api.call("materials.multipart_initiate", {"fileHash": file_hash, "fileName": name})
    ref = {
        "materialId": session["materialId"],
        "uploadId": session["uploadId"],
        "fileHash": file_hash,
        "fileName": name,
    }
    return session, ref


def put_parts(api, ref: dict, pieces: list[bytes]) -> list[dict]:
    urls = api.call(
        "materials.multipart_presign", {**ref, "partNumbers": list(range(1, len(pieces) + 1))}
    )["urls"]
    parts = []
    for item, piece in zip(urls, pieces):
        answer = requests.put(item["url"], data=piece)
        assert answer.status_code == 200, answer.text
        parts.append({"partNumber": item["partNumber"], "eTag": answer.headers["ETag"]})
    return parts


def split(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def test_presign_parts_has_a_maximum(api):
    started = api.call(
        "materials.multipart_initiate", {"fileHash": "0" * 32, "fileName": "big.wav"}
    )
    with pytest.raises(dubkit.BadRequestError, match="partNumbers: at most 1000"):
        api.call(
            "materials.multipart_presign",
            {
                "materialId": started["materialId"],
                "uploadId": started["uploadId"],
                "fileHash": "0" * 32,
                "fileName": "big.wav",
                "partNumbers": list(range(1, 10_001)),
            },
        )


def test_a_part_still_arriving_cannot_write_into_the_registered_file(api, sandbox, tmp_path):
    sandbox.admin("POST", "/storage", recommendedPartSize=5 * MiB)
    path = samples.noise_wav(tmp_path / "three.wav", 12 * MiB)
    data, md5 = path.read_bytes(), hashlib.md5(path.read_bytes()).hexdigest()
    ref = {"fileHash": md5, "fileName": "three.wav"}
    started = api.call("materials.multipart_initiate", ref)
    ref |= {"materialId": started["materialId"], "uploadId": started["uploadId"]}
    urls = {
        u["partNumber"]: u["url"]
        for u in api.call("materials.multipart_presign", {**ref, "partNumbers": [1, 2, 3, 4]})[
            "urls"
        ]
    }
    parts = []
    for number, piece in (
        (1, data[: 5 * MiB]),
        (2, data[5 * MiB : 10 * MiB]),
        (3, data[10 * MiB :]),
    ):
        answer = requests.put(urls[number], data=piece, timeout=60)
        parts.append({"partNumber": number, "eTag": answer.headers["ETag"]})
    # Part 4 (not part of the file) starts arriving, slowly...
    target = urlsplit(urls[4])
    late = socket.create_connection((target.hostname, target.port), timeout=30)
    late.sendall(
        (
            f"PUT {target.path}?{target.query} HTTP/1.1\r\nHost: {target.netloc}\r\n"
            f"Content-Length: {5 * MiB}\r\n\r\n"
        ).encode()
        + b"\xff" * MiB
    )
    time.sleep(0.5)  # let the first bytes reach the server (not an assertion on time)
    material = api.call("materials.multipart_complete", {**ref, "parts": parts})
    try:  # ...and keeps coming after
        late.sendall(b"\xff" * (4 * MiB))
        reply = late.recv(65536).decode(errors="replace")
    except (BrokenPipeError, ConnectionResetError):
        reply = ""
    late.close()
    assert not reply.startswith("HTTP/1.1 200"), reply[:200]
    served = requests.get(material["addressUrl"], timeout=60).content
    assert len(served) == material["filesize"] == len(data)
    assert hashlib.md5(served).hexdigest() == md5


def test_concurrent_uploads_of_the_same_bytes_make_one_material(api, tmp_path):
    path = samples.speech_recording(tmp_path / "same.wav", "Eight uploads, one material.")
    with ThreadPoolExecutor(8) as pool:
        made = list(
            pool.map(
                lambda i: api.materials.upload(
                    path, progress=False, state_dir=tmp_path / f"state{i}"
                ),
                range(8),
            )
        )
    assert len({m.material_id for m in made}) == 1
    assert [m.material_id for m in api.materials.list()] == [made[0].material_id]


def test_file_links_stop_working_when_their_owner_is_deleted(api, sandbox, tmp_path):
    material = api.materials.upload(
        samples.speech_recording(tmp_path / "m.wav", "Delete me."), progress=False
    )
    line = api.tts.speak("Soon gone.", "sv_s1_en_us_clear_f", output_format="wav")
    wav = samples.speech_recording(tmp_path / "ref.wav", "A voice to copy.").read_bytes()
    sandbox.admin("POST", "/fetch", schemes=["http", "https"], allow=["127.0.0.1"])
    try:
        with _wav_server(wav) as url:
            clone = api.clones.create(f"{url}/ref.wav")
    finally:
        sandbox.admin("POST", "/fetch", remote=True, schemes=["https"], allow=[])
    (record,) = api.voices.clones(voice=clone.voice_id)
    links = {"material": material.address_url, "speech": line.uri, "clone": record.audio}
    assert all(requests.get(u, timeout=10).status_code == 200 for u in links.values())
    api.materials.delete(material)
    api.tasks.delete(api.tasks.list(task_type="tts")[0].task_id)
    api.voices.delete(clone.voice_id)
    for name, link in links.items():
        assert requests.get(link, timeout=10).status_code == 404, name


def test_single_upload_registers_an_audio_material(api, wav):
    material = single_upload(api, wav, "noise.wav")
    assert material["category"] == "audio" and material["mimeType"] == "audio/wav"
    assert material["fileHash"] == md5(wav) and material["filesize"] == len(wav)
    assert isinstance(material["duration"], int) and material["duration"] > 0
    served = requests.get(material["addressUrl"])
    assert served.status_code == 200 and md5(served.content) == md5(wav)
    assert material["audioUrl"] == material["addressUrl"]
    assert [m["materialId"] for m in api.call("materials.list", {})["records"]] == [
        material["materialId"]
    ]


def test_video_registration_probes_duration_resolution_thumbnail_and_audio(api, clip):
    data = clip.read_bytes()
    material = single_upload(api, data, "clip.mp4")
    info = dubkit.media.av.probe(clip)
    assert material["category"] == "video" and material["mimeType"] == "video/mp4"
    assert material["resolution"] == "640x360"
    assert material["duration"] == round(info.duration * 1000)
    thumbnail = requests.get(material["thumbnailUrl"])
    assert thumbnail.status_code == 200 and thumbnail.content[:3] == b"\xff\xd8\xff"  # JPEG
    track = requests.get(material["audioUrl"])
    assert track.status_code == 200 and b"ftyp" in track.content[:16]  # m4a


def test_same_bytes_are_a_duplicate_for_the_same_key_only(api, client_for, sandbox, wav):
    first = single_upload(api, wav, "noise.wav")
    again = api.call("materials.gen_upload_url", {"fileHash": md5(wav), "fileName": "copy.wav"})
    assert again["uploadUrl"] == "" and again["material"]["materialId"] == first["materialId"]
    assert again["materialId"] == first["materialId"]
    other = client_for(sandbox.create_key("other"))
    theirs = other.call("materials.gen_upload_url", {"fileHash": md5(wav), "fileName": "n.wav"})
    assert theirs["uploadUrl"] and "material" not in theirs


def test_presigned_urls_are_signed_and_expire(api, sandbox, wav):
    started = api.call("materials.gen_upload_url", {"fileHash": md5(wav), "fileName": "n.wav"})
    tampered = started["uploadUrl"].replace("materials/", "materialz/")
    answer = requests.put(tampered, data=wav)
    assert answer.status_code == 403 and "signature" in answer.json()["message"]
    forged = started["uploadUrl"][:-4] + "0000"
    assert requests.put(forged, data=b"x").status_code == 403

    sandbox.admin("POST", "/storage", presignTtl=0.5)
    late = api.call("materials.gen_upload_url", {"fileHash": md5(wav), "fileName": "n.wav"})
    time.sleep(0.7)
    answer = requests.put(late["uploadUrl"], data=wav)
    assert answer.status_code == 403 and "expired" in answer.json()["message"]


def test_complete_refuses_bytes_that_are_not_the_announced_file(api, wav):
    started = api.call("materials.gen_upload_url", {"fileHash": md5(wav), "fileName": "n.wav"})
    ref = {
        "s3Uri": started["s3Uri"],
        "fileName": "n.wav",
        "materialId": started["materialId"],
        "fileHash": md5(wav),
    }
    with pytest.raises(dubkit.BadRequestError, match="PUT the bytes"):
        api.call("materials.complete", ref)
    assert requests.put(started["uploadUrl"], data=wav[:-10] + b"0123456789").status_code == 200
    with pytest.raises(dubkit.BadRequestError, match="fileHash"):
        api.call("materials.complete", ref)
    with pytest.raises(dubkit.BadRequestError, match="fileHash: must equal"):
        api.call("materials.complete", {**ref, "fileHash": "0" * 32})
    # The session stayed open: the right bytes complete it.
    assert requests.put(started["uploadUrl"], data=wav).status_code == 200
    assert api.call("materials.complete", ref)["fileHash"] == md5(wav)


def test_parts_are_stored_with_their_md5_as_etag(api, sandbox, wav):
    session, ref = multipart(api, wav)
    assert session["recommendedPartSize"] == DEFAULT_PART_SIZE
    assert session["expiresInSeconds"] == 3600 and session["s3Uri"].startswith("s3://")
    pieces = split(wav, session["recommendedPartSize"])
    parts = put_parts(api, ref, pieces)
    assert [p["eTag"].strip('"') for p in parts] == [md5(p) for p in pieces]
    stored = sandbox.admin("GET", f"/storage/uploads/{ref['uploadId']}")
    assert [(p["partNumber"], p["size"], p["puts"]) for p in stored["parts"]] == [
        (1, len(pieces[0]), 1),
        (2, len(pieces[1]), 1),
    ]
    material = api.call("materials.multipart_complete", {**ref, "parts": parts})
    assert material["materialId"] == ref["materialId"] and material["fileHash"] == md5(wav)
    assert md5(requests.get(material["addressUrl"]).content) == md5(wav)
    assert sandbox.admin("GET", f"/storage/uploads/{ref['uploadId']}") == {
        "uploadId": ref["uploadId"],
        "state": "completed",
        "parts": [],
    }


def test_parts_of_another_size_are_joined(api, wav):
    _, ref = multipart(api, wav)
    parts = put_parts(api, ref, split(wav, 5 * MiB))  # 5 + 5 + 1 MiB, not the 8 MiB slots
    material = api.call("materials.multipart_complete", {**ref, "parts": parts})
    assert md5(requests.get(material["addressUrl"]).content) == md5(wav)


def test_complete_refuses_small_parts_wrong_etags_and_a_wrong_md5(api, wav):
    _, ref = multipart(api, wav)
    small = put_parts(api, ref, split(wav, 4 * MiB))
    with pytest.raises(dubkit.BadRequestError, match=r"parts\[0\]: part 1 is 4194304 bytes"):
        api.call("materials.multipart_complete", {**ref, "parts": small})

    _, ref = multipart(api, wav)
    parts = put_parts(api, ref, split(wav, 8 * MiB))
    wrong = [parts[0], {**parts[1], "eTag": md5(b"something else")}]
    with pytest.raises(dubkit.BadRequestError, match=r"parts\[1\]\.eTag"):
        api.call("materials.multipart_complete", {**ref, "parts": wrong})
    with pytest.raises(dubkit.BadRequestError, match="ascending"):
        api.call("materials.multipart_complete", {**ref, "parts": [parts[0], *parts]})
    with pytest.raises(dubkit.BadRequestError, match="never uploaded"):
        api.call(
            "materials.multipart_complete",
            {**ref, "parts": [parts[0], {"partNumber": 3, "eTag": parts[0]["eTag"]}]},
        )

    # Parts of other bytes than the fileHash announced: refused, and nothing registered.
    other = bytearray(wav)
    other[-1] ^= 0xFF
    _, ref = multipart(api, bytes(other), file_hash=md5(wav))
    parts = put_parts(api, ref, split(bytes(other), 8 * MiB))
    with pytest.raises(dubkit.BadRequestError, match="fileHash: the joined parts have MD5"):
        api.call("materials.multipart_complete", {**ref, "parts": parts})
    assert api.call("materials.list", {})["records"] == []
    # The session stays open: the right bytes for the wrong part complete it.
    fixed = put_parts(api, ref, split(wav, 8 * MiB))
    assert api.call("materials.multipart_complete", {**ref, "parts": fixed})["fileHash"] == md5(wav)


def test_a_resent_part_replaces_the_old_one(api, sandbox, wav):
    _, ref = multipart(api, wav)
    wrong_first = bytes(8 * MiB) + wav[8 * MiB :]  # part 1 all zeros
    parts = put_parts(api, ref, split(wrong_first, 8 * MiB))
    with pytest.raises(dubkit.BadRequestError, match="fileHash"):
        api.call("materials.multipart_complete", {**ref, "parts": parts})
    url = api.call("materials.multipart_presign", {**ref, "partNumbers": [1]})["urls"][0]["url"]
    answer = requests.put(url, data=wav[: 8 * MiB])
    fixed = [{"partNumber": 1, "eTag": answer.headers["ETag"]}, parts[1]]
    with pytest.raises(dubkit.BadRequestError, match=r"parts\[0\]\.eTag"):
        api.call("materials.multipart_complete", {**ref, "parts": parts})  # the old ETag
    material = api.call("materials.multipart_complete", {**ref, "parts": fixed})
    assert md5(requests.get(material["addressUrl"]).content) == md5(wav)
    assert sandbox.admin("GET", f"/storage/uploads/{ref['uploadId']}")["state"] == "completed"


def test_a_resent_part_that_breaks_off_leaves_the_stored_copy(api, sandbox, wav):
    """As in S3, a part's stored copy counts until a re-send of it has fully arrived. A re-send
    cut off midway (a killed client's stale PUT, read by the sandbox after the resumed upload
    had sent that part again) leaves the part as it was, and the upload completes."""
    session, ref = multipart(api, wav)
    parts = put_parts(api, ref, split(wav, session["recommendedPartSize"]))
    url = api.call("materials.multipart_presign", {**ref, "partNumbers": [1]})["urls"][0]["url"]

    def incomplete() -> int:
        return sandbox.admin("GET", "/storage")["refused"].get("incomplete", 0)

    before = incomplete()
    target = urlsplit(url)
    with socket.create_connection((target.hostname, target.port), timeout=30) as stale:
        stale.sendall(
            f"PUT {target.path}?{target.query} HTTP/1.1\r\nHost: {target.netloc}\r\n"
            f"Content-Length: {8 * MiB}\r\n\r\n".encode()
            + bytes(MiB)  # an eighth of the part, then the client is gone
        )
    assert wait_for(lambda: incomplete() == before + 1)  # the sandbox has read it and refused it
    stored = sandbox.admin("GET", f"/storage/uploads/{ref['uploadId']}")["parts"]
    assert [(p["partNumber"], p["eTag"], p["puts"]) for p in stored] == [
        (p["partNumber"], p["eTag"].strip('"'), 1) for p in parts
    ]
    material = api.call("materials.multipart_complete", {**ref, "parts": parts})
    assert md5(requests.get(material["addressUrl"]).content) == md5(wav)


def test_bytes_that_are_not_media_are_refused_and_not_registered(api):
    junk = bytes(range(256)) * 4096
    with pytest.raises(dubkit.UnprocessableError, match="not audio or video"):
        single_upload(api, junk, "junk.mp4")
    assert api.call("materials.list", {})["total"] == 0


def test_uploads_over_the_limit_are_413(api, sandbox, wav):
    sandbox.set_limits(upload_limit=10 * MiB)
    started = api.call("materials.gen_upload_url", {"fileHash": md5(wav), "fileName": "n.wav"})
    answer = requests.put(started["uploadUrl"], data=wav)
    assert answer.status_code == 413 and "upload limit" in answer.json()["message"]
    _, ref = multipart(api, wav)
    urls = api.call("materials.multipart_presign", {**ref, "partNumbers": [1, 2]})["urls"]
    pieces = split(wav, 8 * MiB)
    assert requests.put(urls[0]["url"], data=pieces[0]).status_code == 200
    assert requests.put(urls[1]["url"], data=pieces[1]).status_code == 413


def test_abort_drops_the_parts_and_closes_the_session(api, sandbox, wav):
    _, ref = multipart(api, wav)
    parts = put_parts(api, ref, split(wav, 8 * MiB))
    assert api.call("materials.multipart_abort", ref) is None
    assert sandbox.admin("GET", f"/storage/uploads/{ref['uploadId']}")["state"] == "aborted"
    assert sandbox.admin("GET", f"/storage/uploads/{ref['uploadId']}")["parts"] == []
    with pytest.raises(dubkit.NotFoundError):
        api.call("materials.multipart_presign", {**ref, "partNumbers": [1]})
    with pytest.raises(dubkit.NotFoundError):
        api.call("materials.multipart_complete", {**ref, "parts": parts})
    assert api.call("materials.multipart_abort", ref) is None  # again: still fine
    with pytest.raises(dubkit.BadRequestError, match="fileHash"):
        api.call("materials.multipart_abort", {**ref, "fileHash": "f" * 32})


def test_sessions_belong_to_their_key(api, client_for, sandbox, wav):
    _, ref = multipart(api, wav)
    other = client_for(sandbox.create_key("other"))
    with pytest.raises(dubkit.NotFoundError):
        other.call("materials.multipart_presign", {**ref, "partNumbers": [1]})
    with pytest.raises(dubkit.BadRequestError, match="materialId: is required"):
        api.call("materials.multipart_presign", {"uploadId": ref["uploadId"], "partNumbers": [1]})
    with pytest.raises(dubkit.BadRequestError, match="partNumbers"):
        api.call("materials.multipart_presign", ref)


def test_list_pages_and_soft_delete(api, tmp_path):
    ids = []
    for i in range(3):
        data = samples.noise_wav(tmp_path / f"n{i}.wav", 4096 + i).read_bytes()
        ids.append(single_upload(api, data, f"n{i}.wav")["materialId"])
    first = api.call("materials.list", {"currentPage": 1, "pageSize": 2})
    second = api.call("materials.list", {"currentPage": 2, "pageSize": 2})
    assert first["total"] == 3
    assert [m["materialId"] for m in first["records"] + second["records"]] == ids[::-1]
    assert api.call("materials.delete", {"materialId": ids[1]}) is None
    assert [m["materialId"] for m in api.call("materials.list", {})["records"]] == [ids[2], ids[0]]
    with pytest.raises(dubkit.NotFoundError, match="deleted"):
        api.call("materials.delete", {"materialId": ids[1]})
    with pytest.raises(dubkit.NotFoundError):
        api.call("materials.delete", {"materialId": "mat_unknown"})
    with pytest.raises(dubkit.BadRequestError, match="materialId"):
        api.call("materials.delete", {})
    # A deleted material is no duplicate: the same bytes upload again as a new material.
    data = (tmp_path / "n1.wav").read_bytes()
    assert single_upload(api, data, "n1.wav")["materialId"] not in ids


def test_the_list_keeps_one_mime_type_or_any_of_a_type(api, tmp_path, clip):
    """The mimeType filter of the vendor's guides (interface §8.3): exact, or type/*; a type
    no material has is an empty page, not an error."""
    sound = single_upload(api, samples.noise_wav(tmp_path / "s.wav", 5000).read_bytes(), "s.wav")
    picture = api.materials.upload(clip, progress=False)
    assert picture.mime_type == "video/mp4" and sound["mimeType"].startswith("audio/")

    def listed(mime_type):
        page = api.request("GET", "/assets/material/list", params={"mimeType": mime_type})
        return page["total"], [m["materialId"] for m in page["records"]]

    assert (
        listed("video/*")
        == listed("video/mp4")
        == listed("VIDEO/MP4")
        == (1, [picture.material_id])
    )
    assert listed("audio/*") == listed(sound["mimeType"]) == (1, [sound["materialId"]])
    assert listed("video/webm") == listed("font/*") == (0, [])
    # the client's names, both ends of a page walk
    assert [m.material_id for m in api.materials.list(mime_type="video/*")] == [picture.material_id]
    assert api.materials.list(mime_type="image/png") == []
    for bad in ("video", "", "/mp4", 3):
        with pytest.raises(dubkit.ValidationError) as err:
            api.materials.list(mime_type=bad)
        assert err.value.field == "mimeType"
